"""``gemm``: C[b] = A[b] @ B[b], as a Triton-style tiled kernel on GPUs and a Pallas
blocked matmul on TPUs. Split-K and grouped GEMM (MoE experts) included.

GPU program (one CTA per output tile, launched in group-M swizzled order): a k-loop
that loads an A block ``[block_m, block_k]`` and a B block ``[block_k, block_n]``
per iteration (masked at the edges: only valid bytes are counted), runs one
``[block_m, block_n, block_k]`` MMA, and stores the C tile once. ``num_stages``
buffers pipeline the loads. With ``split_k > 1`` each of a tile's ``split_k``
programs covers a slice of K and adds its partial tile into C with fp32 atomics (4
bytes an element, whatever C's dtype; the L2 absorbs all but the last write of a tile,
see docs/engine.md "Reuse"): C is taken as zeroed beforehand and used as fp32, the
clearing and any cast being the caller's kernels, outside the trace. With
``accumulate`` (C = A B + C, cuBLAS's beta = 1: Megatron-LM's gradient-accumulation
fusion, whose ``wgrad_gemm_accum_fp32`` in ``fused_weight_gradient_dense.cu`` calls
``cublasGemmEx`` with beta 1.0 into the fp32 main gradient) the storing program reads its
C tile before the store, as CUTLASS's epilogue loads the source tensor when beta is not 0
(its sm90 warp-specialized kernels from a producer warp of their own, beside the main
loop's loads: ``is_producer_load_needed``), so a long main loop hides it where HBM has
room.

TPU program (one grid step of ``(M/bm, N/bn, K/bk)``, k last): the Pallas pipeline
copies an input block only when its block index changes from the previous step and
writes the output block back when its index is about to change.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, GpuChip, TpuChip
from accelsim.errors import InputError
from accelsim.families.base import DTYPES, Family, Param, fits, local_limit
from accelsim.families.pallas_rule import Operand, pallas_trace
from accelsim.families.rowwise import REGISTERS_OVERHEAD, REGISTERS_PER_DOT
from accelsim.trace.kernel import (
    DTYPE_BYTES,
    Compute,
    KernelTrace,
    Step,
    Template,
    Transfer,
    check_programs,
)

OUT_DTYPE = {"fp32": "fp32", "tf32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "bf16", "int8": "int32"}
OUT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int32": 4}
ACC_BYTES = 4

IMPL_NAMES = ("cublas", "cutlass", "deepgemm", "triton")
IMPL_HELP = {
    "cublas": "cuBLAS, warp-specialized persistent TMA kernels on Hopper/Blackwell",
    "cutlass": "CUTLASS 3.x cooperative or ping-pong kernels",
    "deepgemm": "DeepGEMM fp8 with block scaling and its own config heuristic",
    "triton": "the Triton tutorial kernel",
}

PARAMS = (
    Param("M", int, help="rows of A and C (all groups together for grouped GEMM)"),
    Param("N", int, help="columns of B and C"),
    Param("K", int, help="contraction dimension"),
    Param("dtype", str, "bf16", DTYPES, "input dtype"),
    Param("batch", int, 1, help="independent GEMMs of the same shape"),
    Param("groups", int, 1, help="grouped GEMM: M is split evenly over this many groups, each with its own B"),
    Param("impl", str, "default", ("default", *IMPL_NAMES),
          help="implementation: " + "; ".join(f"{name}: {what}" for name, what in IMPL_HELP.items())
          + " (default: cublas on NVIDIA GPUs, triton on other GPUs, the Pallas blocked matmul on TPUs)"),
    Param("out_dtype", str, "auto", ("auto", "fp32", "bf16", "fp16"),
          help="output (C) dtype; auto: fp32 for fp32 and tf32 inputs, bf16 for fp8, the input's for 16-bit "
               "inputs (cuBLAS's GemmEx and CUTLASS also write fp32 from 16-bit inputs: out_dtype=fp32)"),
    Param("accumulate", bool, False,
          help="GPU: C = A B + C (cuBLAS's beta = 1): the epilogue reads C before it stores the sum, as "
               "Megatron-LM's weight-gradient GEMMs add into the fp32 main gradient"),
    Param("layout", str, "contiguous", ("contiguous", "masked"),
          help="grouped GEMM (groups > 1): the groups' rows concatenated (contiguous) or one padded batch "
               "per group (masked, every row valid); picks DeepGEMM's heuristic"),
)
CONFIG = (
    Param("block_m", int), Param("block_n", int), Param("block_k", int),
    Param("group_m", int, help="GPU: tiles per group in the swizzled launch order"),
    Param("split_k", int, help="GPU: programs per output tile, each over K/split_k"),
    Param("num_stages", int, help="GPU: pipeline buffers; TPU: buffer count"),
    Param("num_warps", int, help="GPU: warps per program"),
    Param("cluster", int, help="GPU: programs per thread-block cluster that share one multicast read of "
                               "their B tile (1, or up to the chip's shared_cache.multicast; default 1)"),
    Param("pair", int, help="GPU: programs one MMA spans (Blackwell's 2-SM MMA): consecutive programs down M "
                            "split their B tile, each loading and holding its half (1, or up to the chip's "
                            "matrix_unit.pair; default 1)"),
    Param("schedule", str, choices=("cooperative", "pingpong"),
          help="cutlass, cublas: warp-specialized kernel schedule (two consumer warpgroups on one tile, or on "
               "alternate tiles)"),
    Param("tile_scheduler", str, choices=("data_parallel", "stream_k"),
          help="cutlass, cublas (cooperative): persistent tile scheduler; stream_k spreads a quantised last "
               "wave's k-iterations over every CTA where CUTLASS's heuristic does (default data_parallel)"),
    Param("multicast", str, choices=("A", "B"),
          help="GPU with clusters: the operand a cluster's one L2 read feeds (B: programs down M share their B "
               "tile, as cuBLAS's 2x1 clusters; A: programs across N share their A tile, as DeepGEMM may pick; "
               "default B)"),
    Param("persistent_ctas", int, help="cutlass, cublas, deepgemm: persistent CTAs walking the output tiles "
                                       "(default: one per SM; DeepGEMM: as many as its waves need)"),
)


def _problem(params: dict[str, Any]) -> tuple[int, int, int, int, str]:
    groups, batch = params["groups"], params["batch"]
    if params["M"] % groups:
        raise InputError(f"M={params['M']} is not divisible by groups={groups}", field="params.groups")
    return params["M"] // groups, params["N"], params["K"], batch * groups, params["dtype"]


def output_dtype(params: dict[str, Any]) -> str:
    """The dtype C is written in: ``out_dtype``, or the usual one for the input dtype."""
    given = params.get("out_dtype", "auto")
    return OUT_DTYPE[params["dtype"]] if given == "auto" else given


def triton_default_config(params: dict[str, Any], chip: Chip) -> dict[str, Any]:
    """The config the Triton-style GEMM runs when none is given. GPUs: the Triton tutorial's large tiles
    (128x256x64, 4 stages, 8 warps for 16-bit inputs; 128x128x32, 3 stages for fp32) when
    their output tiles fill at least 3/4 of the SMs; else, as library heuristics do for
    skinny and small problems (decode GEMVs), the largest of 128x128, 64x128 and 64x64 that
    does (4 stages, 4 warps), or 64x64 split along K (at most 8 ways, each at least 256
    deep) until the SMs are that full. Stages are dropped (down to 2) where the chip's
    shared memory cannot hold them."""
    m, n, k, batch, dtype = _problem(params)
    if isinstance(chip, TpuChip):
        mxu = chip.matrix.shape[0]
        return {"block_m": min(512, _round_up(m, 8)), "block_n": min(512, _round_up(n, mxu)),
                "block_k": min(512, _round_up(k, mxu)), "group_m": 1, "split_k": 1, "num_stages": 2, "num_warps": 4}
    small = DTYPE_BYTES[dtype] >= 4
    block_k = 32 if small else 64
    full = DEFAULT_FILL * chip.num_cores

    def tiles(bm: int, bn: int) -> int:
        return batch * math.ceil(m / bm) * math.ceil(n / bn)

    config = {"block_m": 128, "block_n": 128 if small else 256, "block_k": block_k, "group_m": 8, "split_k": 1,
              "num_stages": 3 if small else 4, "num_warps": 8}
    if tiles(config["block_m"], config["block_n"]) < full:
        for bm, bn in ((128, 128), (64, 128), (64, 64)):
            if tiles(bm, bn) >= full:
                break
        split_k = _default_split_k(tiles(bm, bn), k, full)
        config = {"block_m": bm, "block_n": bn, "block_k": block_k, "group_m": 8, "split_k": split_k,
                  "num_stages": 4, "num_warps": 4}
    while config["num_stages"] > 2 and not fits(check, params, config, chip):
        config["num_stages"] -= 1
    return config


DEFAULT_FILL = 0.75
"""Output tiles per SM, as a fraction of one wave, that the default config aims for."""
MAX_DEFAULT_SPLIT_K = 8


def _default_split_k(tiles: int, k: int, full: float) -> int:
    """Split K in two until the tiles x splits fill ``full`` SMs (at most 8 ways, each at
    least 256 deep)."""
    split_k = 1
    while split_k < MAX_DEFAULT_SPLIT_K and tiles * split_k < full and k // (2 * split_k) >= 256:
        split_k *= 2
    return split_k


def fit_defaults(params: dict[str, Any], config: dict[str, Any], given: set[str], chip: Chip) -> dict[str, Any]:
    """A split-K the user did not give follows the tile they did: the default's split was
    chosen for its own (smaller) tile, and a 128x128 tile on a 512^3 GEMM ran split in two
    without being asked (5.32 us; 6.36 us unsplit). A warp-specialized default's cooperative
    schedule becomes ping-pong where the tile given has fewer than 128 rows. A default's
    stream-K scheduler stays where the kernel given can run it (cooperative, unsplit, no
    2-SM pair), and otherwise gives way to data-parallel."""
    if config.get("schedule") == "cooperative" and "schedule" not in given and config["block_m"] < 128:
        config = {**config, "schedule": "pingpong"}  # a cooperative kernel needs two 64-row halves
    if "split_k" not in given and not isinstance(chip, TpuChip) and {"block_m", "block_n"} & given:
        m, n, k, batch, _ = _problem(params)
        tiles = batch * math.ceil(m / config["block_m"]) * math.ceil(n / config["block_n"])
        config = {**config, "split_k": _default_split_k(tiles, k, DEFAULT_FILL * chip.num_cores)}
    if "tile_scheduler" not in given and (config.get("schedule") != "cooperative" or config["split_k"] > 1
                                          or config.get("pair", 1) > 1):
        config = {key: value for key, value in config.items() if key != "tile_scheduler"}
    return config


def triton_config_space(params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    m, n, k, _, dtype = _problem(params)
    out = []
    if isinstance(chip, TpuChip):
        for bm in (128, 256, 512, 1024):
            for bn in (128, 256, 512, 1024):
                for bk in (128, 256, 512, 1024, 2048):
                    config = {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 1, "split_k": 1,
                              "num_stages": 2, "num_warps": 4}
                    if fits(check, params, config, chip):
                        out.append(config)
        return out
    # Tile shapes of the Triton matmul tutorial's autotuning list and of cuBLAS's common
    # Hopper/Ampere kernels; split-K only when the output tiles cannot fill the chip. Where
    # the L2 can multicast (Hopper's TMA), clusters of 2 share their B tiles, as cuBLAS's
    # Hopper kernels do: in the model that only lowers L2 demand, so it replaces cluster 1.
    # Where one MMA can span two SMs (Blackwell), pairs split their B tiles instead, as
    # cuBLAS's and CUTLASS's 2-SM Blackwell kernels do: the same L2 demand as a multicast
    # pair, and half of B through each SM's port and shared memory, so it replaces both.
    # With an odd number of tile rows a pair needs a padding row, whose tensor work is wasted:
    # there both are searched.
    multicast = [{"cluster": 2}] if max_cluster(chip) >= 2 else [{}]
    paired = dtype != "fp32" and chip.matrix.pair >= 2
    tiles = ((128, 256), (256, 128), (128, 128), (64, 256), (256, 64), (128, 64), (64, 128), (64, 64))
    for bm, bn in tiles:
        output_tiles = math.ceil(m / bm) * math.ceil(n / bn)
        splits = (1, 2, 4, 8) if output_tiles < chip.num_cores else (1,)
        sharing = multicast
        if paired:
            sharing = [{"pair": 2}] + (multicast if math.ceil(m / bm) % 2 else [])
        for bk in (32, 64, 128):
            for stages in (3, 4, 5):
                for warps in (4, 8):
                    for split_k in splits:
                        if split_k > 1 and k // split_k < 256:
                            continue
                        for shared in sharing:
                            config = {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 8,
                                      "split_k": split_k, "num_stages": stages, "num_warps": warps, **shared}
                            if fits(check, params, config, chip):
                                out.append(config)
    return out


def _local_bytes(config: dict[str, Any], dtype: str, kind: str, buffers: int | None = None,
                 out_dtype: str | None = None) -> int:
    """GPU: the staged A and B tiles, ``buffers`` of each (:meth:`Chip.staged_buffers`;
    a pair's program stages its share of B); TPU: ``num_stages`` (double-buffered) A, B
    and C blocks plus the fp32 accumulator scratch."""
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    stages = config["num_stages"] if buffers is None else buffers
    tiles = (bm * bk + bk * -(-bn // config.get("pair", 1))) * DTYPE_BYTES[dtype] * stages
    if kind == "tpu":
        return int(tiles + bm * bn * (ACC_BYTES + 2 * OUT_BYTES[out_dtype or OUT_DTYPE[dtype]]))
    return int(tiles)


def _registers_per_thread(config: dict[str, Any], in_tensor_memory: bool = False) -> int:
    """fp32 accumulator spread over the program's threads (unless it lives in tensor
    memory), plus addressing and staging."""
    threads = config["num_warps"] * 32
    accumulator = 0 if in_tensor_memory else config["block_m"] * config["block_n"] // threads
    return min(255, accumulator + REGISTERS_OVERHEAD + REGISTERS_PER_DOT)


def accumulates_in_tensor_memory(chip: Chip, dtype: str) -> bool:
    """Blackwell's MMAs accumulate in tensor memory (fp32 GEMMs run on the CUDA cores)."""
    return isinstance(chip, GpuChip) and chip.local.tensor_memory_bytes > 0 and dtype != "fp32"


def max_cluster(chip: Chip) -> int:
    """Programs one L2 read can feed at once (the GPU's TMA multicast); 1 without it."""
    return chip.shared_cache.multicast if isinstance(chip, GpuChip) and chip.shared_cache is not None else 1


def check(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    for key in ("block_m", "block_n", "block_k", "group_m", "split_k", "num_stages", "num_warps"):
        if not isinstance(config.get(key), int) or config[key] < 1:
            raise InputError("expected a positive integer", field=f"params.{key}")
    split, k = config["split_k"], params["K"]
    if isinstance(chip, GpuChip) and (split - 1) * math.ceil(k / split) >= k:
        raise InputError(f"split_k={split} leaves some of its K slices empty (K={k}, ceil(K/split_k) each); "
                         f"use fewer splits", field="params.split_k")
    dtype = params["dtype"]
    on_vector_units = isinstance(chip, GpuChip) and dtype == "fp32"
    if not on_vector_units and dtype not in chip.matrix.flops_per_cycle_per_core:
        raise InputError(f"{chip.name} has no matrix-unit rate for {dtype}", field="params.dtype")
    need = _local_bytes(config, dtype, chip.kind, chip.staged_buffers(config["num_stages"]), output_dtype(params))
    limit, limit_field = local_limit(chip)
    if need > limit:
        raise InputError(
            f"block_m/block_n/block_k/num_stages need {need} bytes of local memory per program; "
            f"{chip.name} allows {int(limit)} ({limit_field})",
            field="params.block_m",
        )
    if config.get("tile_scheduler") == "stream_k" and config.get("schedule") is None:
        raise InputError("tile_scheduler=stream_k is a persistent warp-specialized kernel's scheduler: give "
                         "schedule=cooperative (impl=cutlass or cublas)", field="params.tile_scheduler")
    cluster = config.get("cluster", 1)
    if not isinstance(cluster, int) or cluster < 1:
        raise InputError("expected a positive integer", field="params.cluster")
    if cluster > 1:
        most = max_cluster(chip)
        if cluster > most:
            raise InputError(f"{chip.name} cannot multicast a read to {cluster} programs (at most {most})",
                             field="params.cluster")
        if config.get("multicast", "B") == "B" and config["group_m"] % cluster:
            raise InputError(f"cluster={cluster} pairs consecutive programs down M: group_m must be a multiple of it",
                             field="params.group_m")
    pair = config.get("pair", 1)
    if not isinstance(pair, int) or pair < 1:
        raise InputError("expected a positive integer", field="params.pair")
    if pair > 1:
        most = chip.matrix.pair if isinstance(chip, GpuChip) else 1
        if pair > most:
            raise InputError(f"{chip.name} cannot span one MMA over {pair} programs (matrix_unit.pair: {most})",
                             field="params.pair")
        if on_vector_units:
            raise InputError("fp32 GEMMs run on the CUDA cores: no MMA to pair", field="params.pair")
        if cluster > 1:
            raise InputError("pair and cluster both share B tiles within a cluster; give one of them",
                             field="params.pair")
        if config["group_m"] % pair:
            raise InputError(f"pair={pair} spans consecutive programs down M: group_m must be a multiple of it",
                             field="params.group_m")
    if accumulates_in_tensor_memory(chip, dtype):
        if config["block_m"] * config["block_n"] * ACC_BYTES > chip.local.tensor_memory_bytes:
            raise InputError(f"the {config['block_m']}x{config['block_n']} fp32 accumulator does not fit in "
                             f"{chip.name}'s {int(chip.local.tensor_memory_bytes)} bytes of tensor memory; use "
                             f"smaller blocks", field="params.block_n")
    elif isinstance(chip, GpuChip) and config["block_m"] * config["block_n"] // (config["num_warps"] * 32) > 255:
        raise InputError("the accumulator does not fit in registers; use more warps or smaller blocks",
                         field="params.num_warps")


def triton_build(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    if isinstance(chip, TpuChip):
        return _build_tpu(params, config)
    return _build_gpu(params, config, accumulates_in_tensor_memory(chip, params["dtype"]),
                      chip.staged_buffers(config["num_stages"]))


# ---------------------------------------------------------------- implementations



def implementation(params: dict[str, Any], chip: Chip):
    """The :class:`~accelsim.families.gemm_impls.base.GemmImpl` that ``params["impl"]`` names on
    ``chip``. ``default``: what a PyTorch user's ``torch.matmul`` runs, cuBLAS, on NVIDIA GPUs;
    the Triton-style kernel on other GPUs (AMD's hipBLASLt is not modelled; its kernels are
    not warp-specialized in the Hopper sense); TPUs run the Pallas blocked matmul."""
    from accelsim.families.gemm_impls import cublas, cutlass, deepgemm, triton  # they build on this module

    name = params.get("impl", "default")
    if isinstance(chip, TpuChip):
        if name not in ("default", "triton"):
            raise InputError(f"{chip.name} runs the Pallas blocked matmul; impl={name} is a GPU library",
                             field="params.impl")
        return triton.IMPL
    if name == "default":
        return cublas.IMPL if chip.vendor == "nvidia" else triton.IMPL
    return {"cublas": cublas.IMPL, "cutlass": cutlass.IMPL, "deepgemm": deepgemm.IMPL, "triton": triton.IMPL}[name]


def default_config(params: dict[str, Any], chip: Chip) -> dict[str, Any]:
    """The config the implementation runs when none is given (its heuristic, where public)."""
    return implementation(params, chip).default_config(params, chip)


def config_space(params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    """The configs ``config=auto`` searches: the implementation's kernels that fit."""
    return implementation(params, chip).config_space(params, chip)


def check_config(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    implementation(params, chip).check(params, config, chip)


def build(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    return implementation(params, chip).build(params, config, chip)


def _metadata(params, config) -> dict[str, Any]:
    return {"family": "gemm", "params": dict(params), "config": dict(config), "generator": "accelsim.families.gemm"}


def _tensors(m, n, k, b, dtype, out_dtype) -> dict[str, dict]:
    return {
        "A": {"shape": [b, m, k], "dtype": dtype},
        "B": {"shape": [b, k, n], "dtype": dtype},
        "C": {"shape": [b, m, n], "dtype": out_dtype if out_dtype != "int32" else "fp32"},
    }


# ---------------------------------------------------------------- GPU


def swizzled_tiles(num_m: int, num_n: int, group_m: int) -> tuple[np.ndarray, np.ndarray]:
    """(pid_m, pid_n) of each program id in Triton's grouped ("super-grouping") order."""
    pid = np.arange(num_m * num_n)
    per_group = group_m * num_n
    first_m = (pid // per_group) * group_m
    size_m = np.minimum(num_m - first_m, group_m)
    return first_m + (pid % per_group) % size_m, (pid % per_group) // size_m


def _build_gpu(params: dict[str, Any], config: dict[str, Any], in_tensor_memory: bool = False,
               buffers: int | None = None) -> KernelTrace:
    m, n, k, b, dtype = _problem(params)
    bm, bn, bk, split = config["block_m"], config["block_n"], config["block_k"], config["split_k"]
    in_bytes, out_dtype = DTYPE_BYTES[dtype], output_dtype(params)
    num_m, num_n = -(-m // bm), -(-n // bn)  # exact for any size (a float ceil is not)
    # 2-SM MMA: programs 2i and 2i+1 down M (one swizzle group holds both) split their B
    # tile. With an odd number of tile rows the grid gets a padding row, as the kernels
    # launch it: the last row's partner loads its share of B and runs the MMA on rows past
    # M (masked, so no useful flops), reads no A and stores nothing.
    pair = config.get("pair", 1)
    rows_launched = -(-num_m // pair) * pair
    tiles = rows_launched * num_n
    # Programs: axis 0 = output tile (swizzled), axis 1 = split-K slice, axis 2 = batch.
    total = tiles * split * b
    check_programs(total)
    pid_m, pid_n = swizzled_tiles(rows_launched, num_n, config["group_m"])
    k_per_split = math.ceil(k / split)
    tile_index = np.arange(total) % tiles
    split_index = (np.arange(total) // tiles) % split
    edge_m = (pid_m == num_m - 1) & (m % bm != 0)
    edge_n = (pid_n == num_n - 1) & (n % bn != 0)
    last_split = split_index == split - 1
    padding = pid_m >= num_m

    templates: list[Template] = []
    template_of = np.zeros(total, dtype=np.int64)
    for em, en, ls, pad in itertools.product((False, True), repeat=4):
        chosen = edge_m[tile_index] == em
        chosen &= edge_n[tile_index] == en
        chosen &= last_split == ls
        chosen &= padding[tile_index] == pad
        if not chosen.any():
            continue
        rows = m - (num_m - 1) * bm if em else bm
        cols = n - (num_n - 1) * bn if en else bn
        k_span = k - (split - 1) * k_per_split if ls else k_per_split
        template_of[chosen] = len(templates)
        templates.append(_gpu_template(f"t{len(templates)}", rows, cols, k_span, bm, bn, bk, dtype,
                                       in_bytes, out_dtype, split, config.get("cluster", 1), pair, pad,
                                       config.get("multicast", "B"), params.get("accumulate", False) and ls))
    program_vars = {
        "pid_m": np.tile(pid_m, split * b).tolist(),
        "pid_n": np.tile(pid_n, split * b).tolist(),
        "k0": (split_index * math.ceil(k_per_split / bk)).tolist(),
        "batch": (np.arange(total) // (tiles * split)).tolist(),
    }
    if pair > 1:  # which share of the B tile a pair's program loads: its own block identity
        program_vars["b_part"] = np.tile(pid_n * pair + pid_m % pair, split * b).tolist()
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": f"gemm_{dtype}_{params['M']}x{n}x{k}" + (f"_b{b}" if b > 1 else ""),
            "grid": [tiles, split, b],
            "resources": {"local_memory_bytes": _local_bytes(config, dtype, "gpu", buffers),
                          "warps": config["num_warps"],
                          "registers_per_thread": _registers_per_thread(config, in_tensor_memory),
                          "tensor_memory_bytes": config["block_m"] * config["block_n"] * ACC_BYTES
                          if in_tensor_memory else 0},
            "pipeline_depth": config["num_stages"],
        },
        "tensors": _tensors(m, n, k, b, dtype, out_dtype),
        "templates": [t.model_dump() for t in templates],
        "program_template": template_of.tolist() if len(templates) > 1 else None,
        "program_vars": program_vars,
        "metadata": _metadata(params, config),
    })


def _mma(rows, cols, depth, bm, bn, bk, dtype, pair=1, useful=True) -> Compute:
    """fp32 GEMMs on GPUs run on the CUDA cores (FMA); every other dtype on tensor cores
    (``tf32`` is how fp32 inputs reach them)."""
    flops = 2.0 * rows * cols * depth
    if dtype == "fp32":
        return Compute(unit="vector", flops=flops, dtype="fp32")
    return Compute(unit="matrix", flops=flops, dtype=dtype, shape=[bm, bn, bk], pair=pair, useful=useful)


def _gpu_template(name, rows, cols, k_span, bm, bn, bk, dtype, in_bytes, out_dtype, split, cluster=1,
                  pair=1, padding=False, multicast="B", reads_c=False) -> Template:
    """One program's steps; ``padding``: a 2-SM pair's partner past the last tile row
    (its share of B and a masked MMA; no A, no store). A cluster multicasts its B tile, or
    with ``multicast="A"`` its A tile: the L2 serves one read for the cluster's programs
    (which programs pair up is not traced: only the L2's demand changes). ``reads_c``: the
    epilogue reads its C tile before the store (``accumulate``; CUTLASS's epilogue loads the
    source tensor when beta is not 0; with split-K, the last K slice's program)."""
    a_shared, b_shared = (cluster, 1) if multicast == "A" else (1, cluster)
    full, rest = divmod(k_span, bk)
    b_cols, b_block = (cols, "pid_n") if pair == 1 else (-(-cols // pair), "b_part")
    steps = []
    for count, depth, first in ((full, bk, 0), (1 if rest else 0, rest, full)):
        if not count:
            continue
        k_index = f"k0+k+{first}" if first else "k0+k"
        steps.append(Step(
            repeat=count,
            loop_var="k",
            transfers=[
                *([] if padding else
                  [Transfer(tensor="A", block=["batch", "pid_m", k_index], bytes=int(rows * depth * in_bytes),
                            multicast=a_shared)]),
                Transfer(tensor="B", block=["batch", k_index, b_block], bytes=int(depth * b_cols * in_bytes),
                         multicast=b_shared),
            ],
            compute=[_mma(rows, cols, depth, bm, bn, bk, dtype, pair, useful=not padding)],
        ))
    if padding:
        return Template(name=name, steps=steps)
    # Split-K programs add fp32 partial tiles into C (atomics); otherwise one store.
    out_bytes = ACC_BYTES if split > 1 else OUT_BYTES[out_dtype]
    source = [Transfer(tensor="C", block=["batch", "pid_m", "pid_n"], bytes=int(rows * cols * OUT_BYTES[out_dtype]))]
    steps.append(Step(
        transfers=[*(source if reads_c else []),
                   Transfer(tensor="C", block=["batch", "pid_m", "pid_n"], bytes=int(rows * cols * out_bytes),
                            direction="write")],
    ))
    return Template(name=name, steps=steps)


# ---------------------------------------------------------------- TPU


def quick_bound(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> float:
    """A bound no simulation of ``config`` goes below, from the problem and the config alone
    (before its trace is built). TPU: a TensorCore runs each of its grid steps' matrix work
    and pays the per-step overhead, so the busiest core needs at least (all matrix work at
    the unit's rate + all steps' overheads) / cores, plus the launch. GPU: the
    implementation's own (:attr:`~accelsim.families.gemm_impls.base.GemmImpl.quick_bound`),
    else 0 (the trace bound orders GPU configs)."""
    if not isinstance(chip, TpuChip):
        impl = implementation(params, chip)
        return impl.quick_bound(params, config, chip) if impl.quick_bound else 0.0
    m, n, k, b, dtype = _problem(params)
    steps = b * math.ceil(m / config["block_m"]) * math.ceil(n / config["block_n"]) * math.ceil(k / config["block_k"])
    per_cycle = chip.matrix.flops_per_cycle_per_core.get(dtype)
    efficiency = max(chip.matrix.efficiency, chip.matrix.chained_efficiency)
    matrix_s = 2.0 * b * m * n * k / (per_cycle * chip.clock_hz * efficiency) if per_cycle else 0.0
    return (matrix_s + steps * chip.program_overhead_s) / chip.num_cores + chip.launch_overhead_s


def tile_traffic_bound(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> float:
    """A lower bound of any replay of :func:`_build_gpu`'s trace of ``config``: the bytes
    its transfers move through the L2 at the L2's full bandwidth. Every output tile reads
    its A rows and B columns over the whole K (a cluster's multicast operand once per
    cluster, a 2-SM pair's B tile once per pair) and writes its C tile (fp32 partials per
    split-K slice), so the L2 carries at least ``b x (num_n x M x K / a_shared + num_m x K
    x N / (b_shared x pair)) x bytes + C``: the trace's own L2 demand
    (:attr:`~accelsim.engine.programs.ProgramCosts.cache_bytes`) summed in closed form
    (less the C tile an ``accumulate`` epilogue reads first, which this leaves out),
    never more (padding rows and ragged B shares only add), so never above the trace
    bound's L2 term (:func:`~accelsim.engine.gpu_bound.gpu_lower_bound_s`). 0 where the
    chip has no L2, or where the element size is fractional (the trace rounds each
    transfer's bytes down)."""
    if not isinstance(chip, GpuChip) or chip.shared_cache is None:
        return 0.0
    m, n, k, b, dtype = _problem(params)
    in_bytes, out_dtype = DTYPE_BYTES[dtype], output_dtype(params)
    if in_bytes != int(in_bytes):
        return 0.0
    num_m, num_n = -(-m // config["block_m"]), -(-n // config["block_n"])
    cluster, pair, split = config.get("cluster", 1), config.get("pair", 1), config["split_k"]
    a_shared, b_shared = (cluster, 1) if config.get("multicast", "B") == "A" else (1, cluster)
    reads = b * (num_n * m * k / a_shared + num_m * k * n / (b_shared * pair)) * in_bytes
    writes = b * m * n * (ACC_BYTES * split if split > 1 else OUT_BYTES[out_dtype])
    return (reads + writes) / (chip.shared_cache.bandwidth_bytes_per_s * chip.shared_cache.efficiency)


def _build_tpu(params: dict[str, Any], config: dict[str, Any]) -> KernelTrace:
    if params.get("accumulate"):
        raise InputError("the Pallas blocked matmul writes C; accumulate is for GPU GEMMs", field="params.accumulate")
    m, n, k, b, dtype = _problem(params)
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    nm, nn, nk = math.ceil(m / bm), math.ceil(n / bn), math.ceil(k / bk)
    in_bytes, out_dtype = DTYPE_BYTES[dtype], output_dtype(params)
    grid = [b, nm, nn, nk] if b > 1 else [nm, nn, nk]
    check_programs(math.prod(grid))
    coords = np.indices(grid).reshape(len(grid), -1)  # last axis fastest
    if b == 1:
        coords = np.vstack([np.zeros(coords.shape[1], dtype=np.int64), coords])
    bb, i, j, kk = coords
    rows = np.where(i == nm - 1, m - (nm - 1) * bm, bm)
    cols = np.where(j == nn - 1, n - (nn - 1) * bn, bn)
    depth = np.where(kk == nk - 1, k - (nk - 1) * bk, bk)
    operands = [
        Operand("A", "read", (bb, i, kk), rows * depth * in_bytes),
        Operand("B", "read", (bb, kk, j), depth * cols * in_bytes),
        Operand("C", "write", (bb, i, j), rows * cols * OUT_BYTES[out_dtype]),
    ]
    flops = 2.0 * rows * cols * depth
    last_k = kk == nk - 1

    def compute(sel: np.ndarray) -> list[Compute]:
        # Each step adds its partial product into the fp32 VMEM accumulator (one add per
        # output element of the block); the last k step also converts it to the output dtype.
        first = int(np.argmax(sel))
        work = [Compute(unit="matrix", flops=float(flops[first]), dtype=dtype, shape=[bm, bn, bk]),
                Compute(unit="vector", flops=float(bm * bn), dtype="fp32", useful=False)]
        if last_k[first]:
            out = out_dtype.replace("int32", "fp32")
            work.append(Compute(unit="vector", flops=float(bm * bn), dtype=out, useful=False))
        return work

    return pallas_trace(
        name=f"gemm_{dtype}_{params['M']}x{n}x{k}" + (f"_b{b}" if b > 1 else ""),
        grid=grid,
        dimension_semantics=["parallel"] * (len(grid) - 1) + ["arbitrary"],
        operands=operands,
        compute=compute,
        compute_key=flops * 2 + last_k,
        tensors=_tensors(m, n, k, b, dtype, out_dtype),
        local_memory_bytes=_local_bytes(config, dtype, "tpu", out_dtype=out_dtype),
        buffer_count=config["num_stages"],
        metadata=_metadata(params, config),
    )


def _round_up(x: int, g: int) -> int:
    return max(g, math.ceil(x / g) * g)


FAMILY = Family(
    name="gemm",
    description="C = A @ B (batched, split-K, grouped for MoE)",
    params=PARAMS,
    config_params=CONFIG,
    default_config=default_config,
    fit_defaults=fit_defaults,
    quick_bound=quick_bound,
    config_space=config_space,
    build=build,
    check=check_config,
    powers_of_two_on_gpu=("block_m", "block_n", "block_k", "num_warps"),
    compiled_by_triton=lambda params, chip: implementation(params, chip).name == "triton",
    gpu_only=("group_m", "split_k", "num_warps", "cluster", "pair", "tile_scheduler"),
)
