"""``cudnn``: cuDNN's fused flash attention (``cudnn_frontend`` SDPA graphs; PyTorch's
``SDPBackend.CUDNN_ATTENTION``, TransformerEngine's ``FusedAttention``).

cuDNN's kernels are closed. What NVIDIA says in public (the cuDNN 9 release notes and
developer blog "Accelerating Transformers with NVIDIA cuDNN 9", 2024; the cudnn-frontend
SDPA docs) is that its Hopper SDPA is a FlashAttention-style fused kernel built on Hopper's
TMA and warpgroup MMAs, in bf16/fp16 and fp8. So this model assumes: FA3's schedule
(producer warpgroup, two consumer warpgroups of 64 rows, asynchronous MMAs, FP32 softmax
work overlapped, exps on the chain; :mod:`.fa3`); 128-row q tiles with 128-key tiles, or
the largest of 96 and 64 keys whose two K/V stages fit in shared memory (head dim 256: 64);
the backward as FA3's (its main loop's stores, :func:`.fa3.backward_staged`, and its consumers in
step). Assumed, not known: the tiles, the stages, the persistent scheduling
cuDNN may use. In fp8 on Hopper V must be transposed before the PV MMA (an 8-bit wgmma reads its
B operand from shared memory K-major only: PTX ISA ``wgmma.mma_async``, whose transpose immediates
are for 16-bit types; FA3 paper, section 3.3), and cuDNN takes V as PyTorch lays it out (head dim
fastest); assumed done in shared memory as FA3's ``load_fp8`` does, so a tile's first block's
transpose is on its chain (``Impl.fp8_v_transpose``; cuDNN's CTAs are not persistent here, so its
tiles pay their first loads anyway). On Blackwell (no FA3) its tcgen05 kernels are assumed to be laid out as the public
Blackwell attention kernels are (FlashAttention-4's ``flash_attn/cute/flash_fwd_sm100.py``,
CUTLASS's Blackwell FMHA examples): a CTA runs two 128-row query tiles against one stream of K and
V, each tile's softmax on a warpgroup of its own (:data:`BLACKWELL_Q_TILES`), so a CTA covers 256
query rows; the rest of the assumptions as on Hopper, the backward's Hopper staging (what FA3
stores to shared memory) included; no B200 backward record checks it. The assumption is taken
from the open kernels, not from the check records; those are consistent with it (the B200
cudnn-frontend prefills, never fitted: a 256- and a 512-token chunk against the same 32k cache
take 0.388 and 0.393 ms at 32 query heads, one wave of 256-row CTAs either way). FlashAttention-4
gives such a CTA 16 warps; the model's 12 (:func:`_forward_warps`) are left as they were."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip
from accelsim.families.attention_impls import fa3, triton
from accelsim.families.attention_impls.base import (WARPGROUP_WARPS, Impl, Schedule, config, is_blackwell,
                                                    is_hopper)
from accelsim.trace.kernel import DTYPE_BYTES

STAGES = 2
ROWS = 128


BLACKWELL_Q_TILES = 2
"""Query tiles of 128 rows one Blackwell CTA runs side by side against one stream of K and V, each
owned by a softmax warpgroup of its own (FlashAttention-4, ``flash_attn/cute/flash_fwd_sm100.py``:
``q_stage = 2``, "2 Q tile per CTA", ``cta_tiler = (2 * m_block_size, ...)``, warps ``softmax0`` and
``softmax1``; CUTLASS's Blackwell FMHA examples the same). cuDNN's kernels are closed: assumed."""


def _rows(chip: Chip) -> int:
    return ROWS * BLACKWELL_Q_TILES if is_blackwell(chip) else ROWS


def _keys_that_fit(p: dict[str, Any], chip: Chip) -> int:
    size, d, rows = DTYPE_BYTES[p["dtype"]], p["head_dim"], _rows(chip)
    for keys in (128, 96, 64):
        if (rows * d + STAGES * 2 * keys * d) * size <= chip.local.max_per_program_bytes:
            return keys
    return 32


def _forward_warps(chip: Chip) -> int:
    """A producer warpgroup and the consumer warpgroups: on Hopper one per 64 rows (a wgmma's M),
    on Blackwell one softmax warpgroup per 128-row query tile."""
    if is_blackwell(chip):
        return WARPGROUP_WARPS * (BLACKWELL_Q_TILES + 1)
    return fa3.warps(ROWS)


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    if p["decode"]:
        return triton.decode_config(p, chip)
    if p["backward"]:
        bm, bn = fa3.backward_tile(p["head_dim"])
        return config(bm, bn, STAGES, 12)
    return config(_rows(chip), _keys_that_fit(p, chip), STAGES, _forward_warps(chip))


def _unavailable(chip: Chip) -> str | None:
    return None if is_hopper(chip) or is_blackwell(chip) else "cuDNN's fused flash attention needs Hopper or Blackwell"


TENSOR_MEMORY_SCHEDULE = Schedule(chained=False, overlapped_vector=True, producer_warps=4,
                                  consumer_chains="separate")
"""On Blackwell: the MMAs (``tcgen05.mma``) are issued by one thread and accumulate in tensor
memory, not in the softmax warps' registers, so the softmax warpgroups' work (their exps on the
SFUs) and the MMAs of other tiles overlap: each consumer is a chain of its own."""

IMPL = Impl(
    name="cudnn",
    summary="cuDNN's fused attention (assumed FA3-like; the default on Blackwell)",
    unavailable=_unavailable,
    default_config=default_config,
    schedule=fa3.WARP_SPECIALIZED,
    blackwell_schedule=TENSOR_MEMORY_SCHEDULE,
    backward_staged=fa3.backward_staged,
    fp8_v_transpose=True,
)
