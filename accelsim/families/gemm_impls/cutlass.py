"""``impl=cutlass``: CUTLASS 3.x warp-specialized GEMM kernels for Hopper and Blackwell
(``KernelTmaWarpSpecializedCooperative`` and ``...Pingpong``; NVIDIA/cutlass
``media/docs/cpp/efficient_gemm.md``, "Warp Specialization" and "Persistent kernels", and
``include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_{cooperative,pingpong}.hpp``).

What is modelled: a producer warp issues TMA loads of the A and B tiles into ``num_stages``
shared-memory buffers; two consumer warpgroups issue the wgmma chains, each an instruction
stream of its own; the kernel is persistent (one CTA per SM walks the output tiles in
launch order, ``persistent_ctas``), so a tile after a CTA's first finds its loads already
in flight; 2x1 thread-block clusters multicast each B tile to both CTAs (``cluster=2``), or on
chips whose MMA spans two SMs (Blackwell's ``tcgen05.mma.cta_group::2``, CUTLASS's ``2SmMma``
kernels) the pair splits it (``pair=2``).
``schedule=cooperative``: both consumers split one tile (``block_m`` at least 128) and drain
it together, so a tile's epilogue is exposed; ``schedule=pingpong``: the consumers take
alternate tiles, and one's epilogue runs under the other's main loop. Chips without an
asynchronous MMA fed by TMA (Ampere) run CUTLASS 2.x multistage kernels (``cp.async``, one
CTA per tile), which the Triton-style trace of the ``gemm`` family already describes.

``tile_scheduler=stream_k`` (cooperative only): CUTLASS's stream-K scheduler (:mod:`.stream_k`),
which ``config=auto`` searches beside the data-parallel one where CUTLASS's heuristic would
stream.

``split_k > 1`` (cooperative, no 2-SM pair): the same scheduler's ``DecompositionMode::SplitK``
(``PersistentTileSchedulerSm90StreamKParams`` in ``include/cutlass/gemm/kernel/
tile_scheduler_params.h``: "Force a split-K decomposition. This should be paired with setting
the ``splits`` parameter"): each output tile's k-loop is cut into ``split_k`` equal units that
the persistent CTAs walk like any other work, the units before a tile's last write their fp32
accumulators to the workspace and the last reads and adds them before the epilogue
(:func:`split_k_decomposition`, traced by :mod:`.stream_k`). ``config=auto`` searches 2, 4 and
8 splits where the output tiles cannot fill the SMs (each split at least 8 k-blocks, the fewest
CUTLASS gives a stream-K unit), so that a
skinny GEMM streams its weights from every SM rather than from as many as it has tiles. Where
the split is not exact (tiles that are not whole clusters, k-blocks the splits do not divide)
it runs as the family's split (fp32 partial tiles added into C: :mod:`accelsim.families.gemm`).

**Launch order** (:func:`launch_order`): the persistent tile scheduler's defaults
(``PersistentTileSchedulerSm90``'s ``Arguments`` in ``include/cutlass/gemm/kernel/
sm90_tile_scheduler.hpp``: ``max_swizzle_size = 1``, ``RasterOrderOptions::Heuristic``; the
heuristic in ``tile_scheduler_params.h``, ``get_rasterization_order``: along M where the grid
has more tile columns than rows, else along N). Along N the clusters walk a row of tiles,
their CTAs the cluster's rows (``group_m`` = the cluster's rows); along M they walk a whole
column (``group_m`` = every tile row). It decides what the L2 keeps: waynehacking8's 8192^3
fp16 run of a 128x256, 2x1-cluster kernel moves 1.38 TB/s x 1.92 ms = 2.65 GB through DRAM
(``results/ncu_cutlass_8192.txt`` @fd74d2ac, Nsight Compute: B re-read every wave), which the
model gives as 2.61 GB with this order and 1.76 GB with Triton's 8-row groups. cuBLAS's
order is not public: its configs (:mod:`.cublas`) keep the 8-row groups.

Left out: the epilogue's own shared-memory buffer (stages are counted against the whole CTA
limit), a ``max_swizzle_size`` other than 1, the register-direct epilogue
(``DefaultEpilogue``) that ``EpilogueScheduleAuto`` builds for some kernels, and register
reallocation (the consumers' accumulators must fit as in the Triton-style trace).
"""

from __future__ import annotations

from collections.abc import Callable

from accelsim.arch.model import Chip
from accelsim.errors import InputError
from accelsim.families import gemm
from accelsim.families.base import fits
from accelsim.families.gemm_impls import stream_k
from accelsim.families.gemm_impls.base import Config, GemmImpl, Params, warp_specialized, with_execution
from accelsim.trace.kernel import DTYPE_BYTES, Execution, KernelTrace

SCHEDULES = ("cooperative", "pingpong")
TILES = ((128, 256), (256, 128), (128, 128), (128, 64), (64, 128), (64, 256))
"""CUTLASS's common sm90 tile shapes (its profiler's default instantiations)."""
STAGE_CHOICES = (7, 6, 5, 4, 3, 2)
CONSUMERS = 2
PRODUCER_WARPS = 4
"""The producer is a whole warpgroup (one warp issues the TMA copies; the others idle after
``setmaxnreg`` gives their registers to the consumers)."""


def block_k(dtype: str) -> int:
    """k-block of 128 bytes of each operand row: 64 for 16-bit inputs, 128 for fp8, 32 for
    tf32 (the swizzle width CUTLASS's sm90 collectives stage)."""
    return 128 // DTYPE_BYTES[dtype]


def warp_specialized_config(params: Params, chip: Chip, bm: int, bn: int, schedule: str) -> Config | None:
    """The tile with the most stages that fit, or None where none does."""
    sharing = {"pair": 2} if chip.matrix.pair >= 2 else {"cluster": min(2, gemm.max_cluster(chip))}
    for stages in STAGE_CHOICES:
        config = {"block_m": bm, "block_n": bn, "block_k": block_k(params["dtype"]), "group_m": 8, "split_k": 1,
                  "num_stages": stages, "num_warps": 4 * CONSUMERS + PRODUCER_WARPS, **sharing, "schedule": schedule}
        if fits(check, params, config, chip):
            return config
    return None


def launch_order(params: Params, config: Config) -> Config:
    """``config`` with the tile order CUTLASS's persistent scheduler launches by default
    (module docstring, "Launch order") as the family's ``group_m``: the cluster's (or 2-SM
    pair's) rows where it rasters along N, every tile row (a whole number of clusters) where
    it rasters along M."""
    m, n, _, _, _ = gemm._problem(params)
    rows = max(config.get("cluster", 1), config.get("pair", 1))
    tile_rows = -(-m // config["block_m"])
    tiles_m = -(-tile_rows // rows) * rows  # the grid is whole clusters
    tiles_n = -(-n // config["block_n"])
    return {**config, "group_m": tiles_m if tiles_n > tiles_m else rows}


def config_space(params: Params, chip: Chip) -> list[Config]:
    """The kernels ``config=auto`` searches, each in CUTLASS's launch order."""
    return kernel_space(params, chip, order=launch_order)


def kernel_space(params: Params, chip: Chip, order: Callable[[Params, Config], Config] | None = None) -> list[Config]:
    """The tiles and schedules searched, with their stream-K and split-K variants; ``order``
    gives each its launch order (None: the family's 8-row groups, for :mod:`.cublas`, whose
    order is not public)."""
    if not warp_specialized(chip) or params["dtype"] == "fp32":
        return gemm.triton_config_space(params, chip)
    out = []
    for schedule in SCHEDULES:
        for bm, bn in TILES:
            config = warp_specialized_config(params, chip, bm, bn, schedule)
            if config is None:
                continue
            if order is not None:
                config = order(params, config)
            out.append(config)
            if schedule == "cooperative" and "pair" not in config:
                streamed = {**config, "tile_scheduler": "stream_k"}
                if decomposition(params, streamed, chip):
                    out.append(streamed)
                out.extend({**config, "split_k": split} for split in search_splits(params, config, chip))
    return out


SPLITS = (2, 4, 8)


def search_splits(params: Params, config: Config, chip: Chip) -> list[int]:
    """The split-K counts ``config=auto`` tries for ``config``'s tile: none where its output
    tiles fill the SMs; else each of :data:`SPLITS` that leaves every split the k-iterations
    CUTLASS's scheduler gives a unit at least (``min_iters_per_sk_unit_``,
    :data:`stream_k.MIN_ITERS_PER_UNIT`), which pay for its partial's write and read."""
    if output_tiles(params, config) >= persistent_ctas(config, chip):
        return []
    k_tiles = -(-params["K"] // config["block_k"])
    return [split for split in SPLITS if k_tiles // split >= stream_k.MIN_ITERS_PER_UNIT]


def output_tiles(params: Params, config: Config) -> int:
    m, n, _, batch, _ = gemm._problem(params)
    return batch * -(-m // config["block_m"]) * -(-n // config["block_n"])


def default_config(params: Params, chip: Chip) -> Config:
    """CUTLASS has no heuristic of its own: 128x256 cooperative, the profiler's largest
    tile, in its scheduler's default order, or the Triton-style default where the kernels are
    not warp-specialized. A tile given in place of the default's keeps the default's order."""
    if not warp_specialized(chip) or params["dtype"] == "fp32":
        return gemm.triton_default_config(params, chip)
    config = warp_specialized_config(params, chip, 128, 256, "cooperative")
    return launch_order(params, config) if config is not None else gemm.triton_default_config(params, chip)


def check(params: Params, config: Config, chip: Chip) -> None:
    schedule = config.get("schedule")
    if schedule is not None:
        if schedule not in SCHEDULES:
            raise InputError(f"expected one of: {', '.join(SCHEDULES)}", field="params.schedule")
        if not warp_specialized(chip):
            raise InputError(f"{chip.name} runs no warp-specialized kernels (no asynchronous MMA fed by TMA)",
                             field="params.schedule")
        rows, cols = chip.matrix.shape[0], chip.matrix.shape[1]
        if config["block_m"] % rows or config["block_n"] % cols:
            raise InputError(f"a warp-specialized tile is whole MMA instructions: block_m a multiple of {rows}, "
                             f"block_n of {cols} (matrix_unit.shape), got {config['block_m']}x{config['block_n']}",
                             field="params.block_m" if config["block_m"] % rows else "params.block_n")
        if config.get("tile_scheduler") == "stream_k" and (schedule != "cooperative" or config.get("pair", 1) > 1
                                                            or config["split_k"] > 1):
            raise InputError("stream-K runs with the cooperative schedule, unsplit and without 2-SM pairs (CUTLASS's "
                             "ping-pong kernel refuses its scheduler)", field="params.tile_scheduler")
        if schedule == "cooperative" and config["block_m"] < 128:
            raise InputError("a cooperative kernel splits a tile's rows over two consumer warpgroups: "
                             "block_m must be at least 128", field="params.block_m")
    # the accumulator of a tile sits in both consumers' registers (cooperative) or in one's (ping-pong)
    math_warps = {"cooperative": 4 * CONSUMERS, "pingpong": 4}.get(schedule, config["num_warps"])
    gemm.check(params, {**config, "num_warps": math_warps}, chip)


def persistent_ctas(config: Config, chip: Chip) -> int:
    return config.get("persistent_ctas") or chip.num_cores


def decomposition(params: Params, config: Config, chip: Chip) -> stream_k.Decomposition | None:
    """The stream-K scheduler's split of ``config``'s tiles: split-K where ``split_k > 1``
    (:func:`split_k_decomposition`), else CUTLASS's heuristic (:func:`stream_k.decompose`); None
    where it runs data-parallel (its scheduler, or the heuristic, says so). CUTLASS pads the
    tile grid to whole clusters, so its stream-K tiles are whole clusters; the model's grid is
    not padded, so a tile count that is not a multiple of the cluster runs data-parallel (left
    out: the padded CTA)."""
    if config["split_k"] > 1:
        return split_k_decomposition(params, config)
    if config.get("tile_scheduler") != "stream_k":
        return None
    tiles, cluster = output_tiles(params, config), config.get("cluster", 1)
    if tiles % cluster:
        return None
    k_tiles = -(-params["K"] // config["block_k"])
    split = stream_k.decompose(tiles, k_tiles, persistent_ctas(config, chip), cluster)
    return split if split.streams else None


def split_k_decomposition(params: Params, config: Config) -> stream_k.Decomposition | None:
    """``DecompositionMode::SplitK``: every tile a stream-K tile, shared by ``split_k`` units of
    equal k-ranges (the stream-K units are a multiple of the tiles: :mod:`.stream_k`). None
    where the scheduler does not run (a ping-pong kernel, a 2-SM pair) or the split is not exact
    (the tiles are not whole clusters, the k-blocks do not divide by the splits): the family's
    own split then runs."""
    tiles, split = output_tiles(params, config), config["split_k"]
    k_tiles = -(-params["K"] // config["block_k"])
    if (config.get("schedule") != "cooperative" or tiles % config.get("cluster", 1) or k_tiles % split
            or config.get("pair", 1) > 1):
        return None
    return stream_k.Decomposition(dp_tiles=0, sk_tiles=tiles, sk_units=tiles * split)


def build(params: Params, config: Config, chip: Chip) -> KernelTrace:
    schedule = config.get("schedule")
    if schedule is None:
        return gemm.triton_build(params, config, chip)
    split = decomposition(params, config, chip)
    trace = gemm.triton_build(params, config, chip) if split is None else stream_k.build(params, config, chip, split)
    return with_execution(trace, Execution(
        loads="tma", consumers=CONSUMERS, persistent_ctas=persistent_ctas(config, chip),
        epilogue="overlapped" if schedule == "pingpong" else "exposed"))


def quick_bound(params: Params, config: Config, chip: Chip) -> float:
    """:func:`~accelsim.families.gemm.tile_traffic_bound` where :func:`build` builds the
    family's own trace (data-parallel or the family's split-K); 0 for a stream-K trace."""
    if config.get("schedule") is not None and decomposition(params, config, chip) is not None:
        return 0.0
    return gemm.tile_traffic_bound(params, config, chip)


IMPL = GemmImpl(
    name="cutlass",
    description="CUTLASS warp-specialized persistent kernels (cooperative, ping-pong; Hopper/Blackwell)",
    default_config=default_config,
    config_space=config_space,
    build=build,
    check=check,
    quick_bound=quick_bound,
)
