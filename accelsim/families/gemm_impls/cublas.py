"""``impl=cublas``: cuBLAS / cuBLASLt GEMMs, the default on NVIDIA GPUs (what
``torch.matmul`` and ``F.linear`` run).

cuBLAS is closed: what is assumed, from NVIDIA's public descriptions. On Hopper and
Blackwell its GEMMs are warp-specialized persistent kernels fed by TMA, as CUTLASS 3.x
builds them (the cuBLAS 12.x release notes and NVIDIA's "cuBLAS 12.0 on Hopper" blog:
"the cuBLAS library ... uses ... Hopper's TMA and warp-group MMA"; kernels named
``sm90_xmma_gemm_..._warpspecialized_cooperative_...``, ``nvjet_sm90_...`` in profiles), so a
cuBLAS kernel is simulated as :mod:`.cutlass` simulates CUTLASS's, over the same tiles and
both schedules, with 2x1 clusters. Which kernel its heuristics pick is not public:
``config=auto`` takes the fastest the model finds (the assumption is that cuBLAS's heuristics
and its own autotuned tables find the fastest of its kernels), and the default config (no
search) takes the tile that needs the fewest waves of output tiles over the SMs, the larger
tile on a tie, cooperative, with CUTLASS's stream-K scheduler where CUTLASS's heuristic
spreads a quantised last wave after at least one whole one (:mod:`.stream_k`; assumed of cuBLAS as its kernels are, and
then the waves counted are the busiest CTA's share), and with CUTLASS's split-K decomposition where
its tiles leave SMs idle (:func:`with_default_split`). fp32 inputs run on the CUDA cores
(SGEMM) and every GEMM on chips without TMA (Ampere) in CUTLASS 2.x-style multistage kernels:
the Triton-style trace of the ``gemm`` family.

Left out: cuBLAS's own split-K reduction kernel (``splitKreduce_kernel``, a second launch: the
split is traced as CUTLASS reduces it, the last unit of a tile adding its peers' partials from
the workspace), its GEMV kernels for M = 1 (the tile kernels model them, within a few percent
on the decode records), and heuristic choices the model cannot see (a kernel other than the
fastest).
"""

from __future__ import annotations

import math

from accelsim.arch.model import Chip
from accelsim.families import gemm
from accelsim.families.gemm_impls import cutlass, stream_k
from accelsim.families.gemm_impls.base import Config, GemmImpl, Params, warp_specialized


def default_config(params: Params, chip: Chip) -> Config:
    if not warp_specialized(chip) or params["dtype"] == "fp32":
        return gemm.triton_default_config(params, chip)
    k = gemm._problem(params)[2]
    best, best_key = None, None
    for bm, bn in cutlass.TILES:
        config = cutlass.warp_specialized_config(params, chip, bm, bn, "cooperative" if bm >= 128 else "pingpong")
        if config is None:
            continue
        tiles = cutlass.output_tiles(params, config)
        waves = float(math.ceil(tiles / chip.num_cores))
        streamed = {**config, "tile_scheduler": "stream_k"}
        # stream-K only past a whole wave: below one the default splits K (with_default_split)
        if config["schedule"] == "cooperative" and "pair" not in config and tiles >= chip.num_cores \
                and cutlass.decomposition(params, streamed, chip):
            config = streamed
            waves = stream_k.effective_waves(tiles, math.ceil(k / config["block_k"]),
                                             cutlass.persistent_ctas(config, chip), config.get("cluster", 1))
        key = (waves, -bm * bn)
        if best_key is None or key < best_key:
            best, best_key = config, key
    return with_default_split(params, best, chip) if best is not None else gemm.triton_default_config(params, chip)


def with_default_split(params: Params, config: Config, chip: Chip) -> Config:
    """``config`` split along K where its output tiles leave SMs idle (a skinny GEMM: decode's
    weights times a few rows): the most that :func:`cutlass.search_splits` offers whose units
    still run in one wave (tiles x splits at most the persistent CTAs); a second wave of units
    costs more than the split saves (a 1115 x 1025 x 1089 GEMM's 45 tiles: 19.2 us unsplit, 15.8
    split in 2, 20.6 in 4). It runs
    as CUTLASS's split-K decomposition where that is exact, else as the family's split
    (:func:`cutlass.split_k_decomposition`). An assumption, as the rest of this default: cuBLAS's
    heuristics are not public, but its profiles of skinny GEMMs show a split-K reduction kernel
    after the GEMM (``splitKreduce_kernel``; ``docs/import-profile.md``)."""
    if config.get("schedule") != "cooperative" or "pair" in config:
        return config
    tiles, ctas = cutlass.output_tiles(params, config), cutlass.persistent_ctas(config, chip)
    # search_splits offers none where the tiles already fill the persistent CTAs
    fitting = [split for split in cutlass.search_splits(params, config, chip) if tiles * split <= ctas]
    return {**config, "split_k": max(fitting)} if fitting else config


IMPL = GemmImpl(
    name="cublas",
    description="cuBLAS (warp-specialized persistent TMA kernels on Hopper/Blackwell; multistage on Ampere)",
    default_config=default_config,
    config_space=cutlass.kernel_space,
    build=cutlass.build,
    check=cutlass.check,
    quick_bound=cutlass.quick_bound,
)
