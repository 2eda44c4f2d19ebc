"""``fa3``: FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608; flash-attention ``hopper/``),
Hopper only.

Models: warp specialization, a producer warpgroup that issues the TMA loads of K and V (two
stages) and consumer warpgroups of 64 query rows each that run the warpgroup MMAs
(``hopper/tile_size.h``, ``tile_size_fwd_sm90``: bf16 192x192 at d <= 64 (192x128 causal),
128x176 at d <= 128 (128x128 causal), 128x80 above; fp8 192x160, 128x224, 128x128); MMAs
issued asynchronously (not chained: ``Step.chained`` false); the softmax's FP32 arithmetic
(max, scale, sum, conversion, the O rescale) overlapped with the MMAs by intra-warpgroup
pipelining and ping-pong (``Compute.overlapped``: on the FP32 pipe, off the dependency
chain); the exps on the MUFU, which stay on it: the consumers' MMAs and exps take turns
(``kernel.execution``: the consumer warpgroups with ``consumer_chains: shared``; the
producer loads by TMA). That last choice is what the paper's own numbers show, not
what its schedule diagrams draw: over bf16 and fp8 and head dims 64-256 (non-causal, 16k
tokens) FA3's time per score is within 0-5% of the tensor cores' time at their peak plus the
MUFU's time for one exp (docs/kernels-attention.md, "Why the exps are on the chain");
with the pipes fully overlapped it would be up to twice as fast as measured.
Backward (``hopper/flash_bwd_launch_template.h``): one program per K/V block, 64x128 tiles at
d <= 128 (128x128 at d <= 64, 64x64 above), two consumer warpgroups and a producer; its main loop
(``hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp``, ``bwd_step``) runs the S and dP MMAs, the exps and
dS, stores dS (and P above d128) to shared memory, syncs both consumer warpgroups on a named
barrier, runs the dV, dQ and dK MMAs and stores dQ's fp32 partial to shared memory for a producer
warp's TMA reduce-add (:func:`backward_staged`): the consumers in step, one chain with its FP32
work and those stores on it (:meth:`Schedule.backward`). Decode: FA3's split-KV path with its
combine kernel.
Tile scheduling (``hopper/flash_fwd_launch_template.h``: on sm_90 a forward that is not split
runs a persistent scheduler of ``hopper/tile_scheduler.hpp``, one CTA per SM): non-causal,
``StaticPersistentTileScheduler``, CTA ``c`` taking tiles ``c``, ``c + SMs``, ... in the grid's
order; causal, ``DynamicPersistentTileScheduler``, whose CTAs take the next tile from an atomic
counter as they finish one (as the engine dispatches programs: a free SM takes the next),
longest processing time first (the q blocks from the last, which attends the most keys, to the
first) within sections of heads whose K and V fit a 32 MB share of L2 (:func:`tile_order`).
Either way a CTA's producer loads its next tile's Q and K while the consumers finish the one
before (``prefetch_next_work``; ``kernel.execution.persistent_ctas``), and the consumers issue
a tile's O store by TMA and go on to the next tile (``CollectiveEpilogueFwd::store``: one warp
waits for the store; the ``overlapped`` epilogue). fp8 is the exception, as the release the
FA3 paper timed writes it (``hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp``, 2024; the paper's
section 3.3 on fp8's layouts): its consumers (``mma_fp8``) free Q only after their last PV,
where bf16's ``mma`` frees it before, so the producer loads the next tile's Q only then, and
its producer (``load_fp8``) waits for the tile's O store to leave shared memory (``barrier_O``:
O shares it with the transposed V) before it transposes the next tile's first V block for the
first PV; so a tile's store and the next tile's loads are on the consumers' way: the
``exposed`` epilogue, and its loads after the store (``next_loads: after_store``: the tile pays
its first load's latency and its fill, in step with every other CTA, at an SM's share of HBM).
The V transpose itself (``do_transpose_V``: LDSM, then STSM into ``smem_v_out``; an 8-bit wgmma
reads B only K-major) is the producer's, beside the consumers' MMAs, except a tile's first, which
the first PV waits for: its block, read and written back through shared memory, is on the tile's
chain (``Impl.fp8_v_transpose``; ``load_fp8`` the same from flash-attention commit 5018ac6a,
2024-07-30, the first with the in-kernel V transpose, to v2.7.0).
Leaves out: the steady state's V transposes (their shared-memory traffic beside the MMAs), the
overlap of a tile's first QK^T and softmax with its first V load and transpose (the model puts
them in turn) and the Q load's with the epilogue (the model hides none of it: the two roughly
cancel), the K load of a tile's second block issued only after its first transpose, fp8's softmax
without intra-warpgroup overlap (``mma_fp8`` waits for each GEMM), block quantization's scales,
PackGQA, the backward's scheduler, varlen, paged KV, clusters."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip
from accelsim.families.attention_impls import triton
from accelsim.families.attention_impls.base import Impl, Schedule, TileSchedule, config, hopper_only
from accelsim.trace.kernel import DTYPE_BYTES

WARPGROUP_ROWS = 64
"""Query rows one consumer warpgroup owns (a wgmma's M)."""


def forward_tile(head_dim: int, causal: bool, fp8: bool) -> tuple[int, int]:
    """(block_m, block_n) of ``tile_size_fwd_sm90`` (hopper/tile_size.h) for plain attention."""
    if fp8:
        return (192, 160) if head_dim <= 64 else (128, 224) if head_dim <= 128 else (128, 128)
    if head_dim <= 64:
        return 192, 128 if causal else 192
    if head_dim <= 128:
        return 128, 128 if causal else 176
    return 128, 80


def backward_tile(head_dim: int) -> tuple[int, int]:
    """(q rows per iteration, K/V rows per program) of FA3's Hopper backward."""
    return (128, 128) if head_dim <= 64 else (64, 128) if head_dim <= 128 else (64, 64)


def backward_staged(head_dim: int) -> tuple[str, ...]:
    """What FA3's backward stores to shared memory each iteration (``CollectiveMainloopBwdSm90``
    with ``run_mha_bwd_hdim*``'s sm90 template arguments): dS for the dQ GEMM always; P too where
    the dV and dK GEMMs cannot take it from registers (``Mma_dKV_is_RS`` false: head dims above
    128); the fp32 dQ partial where a producer warp reduce-adds it by TMA (``dQacc_use_TMA``: head
    dims below 256; at 256 the MMA warps add it by atomics from registers)."""
    if head_dim <= 128:
        return "dS", "dQ"
    return ("P", "dS", "dQ") if head_dim < 256 else ("P", "dS")


def warps(block_m: int) -> int:
    """A producer warpgroup and one consumer warpgroup per 64 query rows."""
    return 4 * (block_m // WARPGROUP_ROWS + 1)


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    if p["decode"]:
        return triton.decode_config(p, chip)
    if p["backward"]:
        bm, bn = backward_tile(p["head_dim"])
        return config(bm, bn, 2, 12)
    bm, bn = forward_tile(p["head_dim"], p["causal"], p["dtype"] == "fp8")
    return config(bm, bn, 2, warps(bm))


L2_KV_BYTES = 32 * 1024 * 1024
"""The L2 share FA3's scheduler plans K and V of a section of heads into (``size_l2`` in
``DynamicPersistentTileScheduler::to_underlying_arguments``)."""


def heads_per_section(p: dict[str, Any]) -> int:
    """(batch, head) pairs of one scheduler section: the power of two at or above
    ``L2_KV_BYTES / (K and V bytes of one KV head)`` (``cutlass::find_log2`` rounds up), times
    the query heads per KV head; at least one KV head's."""
    kv_head_bytes = p["seq_kv"] * p["head_dim"] * DTYPE_BYTES[p["dtype"]] * 2
    fit = L2_KV_BYTES // kv_head_bytes
    return (1 << math.ceil(math.log2(fit)) if fit > 1 else 1) * p["group"]


def tile_order(p: dict[str, Any], block_m: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Causal forward: (q block, ``batch * heads + head``) per launch position in the order of
    ``DynamicPersistentTileScheduler::get_block_coord``: sections of
    :func:`heads_per_section` (batch, head) pairs (the last section the remainder); within a
    section each q block over its heads, the q blocks from the last ("longest-processing-time-
    first"). Non-causal: None (its static scheduler walks the grid's order)."""
    if not p["causal"] or p["backward"] or p["decode"]:
        return None
    n_q, pairs = math.ceil(p["seq_q"] / block_m), p["batch"] * p["heads"]
    swizzle = heads_per_section(p)
    tile = np.arange(n_q * pairs)
    section, within = tile // (swizzle * n_q), tile % (swizzle * n_q)
    width = np.where(section < pairs // swizzle, swizzle, max(pairs % swizzle, 1))
    block, pair = within // width, section * swizzle + within % width
    return n_q - 1 - block, pair


def forward_tiles(p: dict[str, Any], block_m: int, chip: Chip) -> TileSchedule:
    """FA3's persistent schedulers (module docstring): one CTA per SM, a free one taking the
    next tile (the engine's dispatch: the dynamic scheduler's atomic counter, and the static
    one's round robin where tiles are equally long), in the causal order of :func:`tile_order`
    or the grid's; fp8's tiles wait for the store before the next tile's loads (``exposed``)."""
    fp8 = p["dtype"] == "fp8"
    return TileSchedule(order=tile_order(p, block_m), persistent_ctas=chip.num_cores,
                        epilogue="exposed" if fp8 else "overlapped",
                        next_loads="after_store" if fp8 else "prefetched")


WARP_SPECIALIZED = Schedule(chained=False, overlapped_vector=True, producer_warps=4, consumer_chains="shared")
"""FA3's consumers: asynchronous MMAs, FP32 softmax work in their shadow, MMAs and exps in turn."""

IMPL = Impl(
    name="fa3",
    summary="FlashAttention-3 (Hopper: warp-specialized, TMA, wgmma; the default on Hopper)",
    unavailable=hopper_only,
    default_config=default_config,
    schedule=WARP_SPECIALIZED,
    forward_tiles=forward_tiles,
    backward_staged=backward_staged,
    fp8_v_transpose=True,
)
