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
cuDNN may use. On Blackwell (no FA3) the same assumptions stand for its tcgen05 kernels,
the backward's Hopper staging (what FA3 stores to shared memory) included; no B200 backward
record checks it."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip
from accelsim.families.attention_impls import fa3, triton
from accelsim.families.attention_impls.base import Impl, Schedule, config, is_blackwell, is_hopper
from accelsim.trace.kernel import DTYPE_BYTES

STAGES = 2
ROWS = 128


def _keys_that_fit(p: dict[str, Any], chip: Chip) -> int:
    size, d = DTYPE_BYTES[p["dtype"]], p["head_dim"]
    for keys in (128, 96, 64):
        if (ROWS * d + STAGES * 2 * keys * d) * size <= chip.local.max_per_program_bytes:
            return keys
    return 32


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    if p["decode"]:
        return triton.decode_config(p, chip)
    if p["backward"]:
        bm, bn = fa3.backward_tile(p["head_dim"])
        return config(bm, bn, STAGES, 12)
    return config(ROWS, _keys_that_fit(p, chip), STAGES, fa3.warps(ROWS))


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
)
