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
d <= 128 (128x128 at d <= 64, 64x64 above), two consumer warpgroups and a producer, dQ by
atomic adds; the same schedule. Decode: FA3's split-KV path with its combine kernel.
Leaves out: the in-kernel V transpose of fp8 (producer work), block quantization's scales,
persistent tile scheduling (a persistent kernel launches one program per SM and walks the
tiles; with the engine's waves the tail is the same except where tiles differ in length,
as causal ones do), varlen, paged KV, PackGQA, clusters."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip
from accelsim.families.attention_impls import triton
from accelsim.families.attention_impls.base import Impl, Schedule, config, hopper_only

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


WARP_SPECIALIZED = Schedule(chained=False, overlapped_vector=True, producer_warps=4, consumer_chains="shared")
"""FA3's consumers: asynchronous MMAs, FP32 softmax work in their shadow, MMAs and exps in turn."""

IMPL = Impl(
    name="fa3",
    summary="FlashAttention-3 (Hopper: warp-specialized, TMA, wgmma; the default on Hopper)",
    unavailable=hopper_only,
    default_config=default_config,
    schedule=WARP_SPECIALIZED,
)
