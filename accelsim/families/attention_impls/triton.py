"""``triton``: the Triton tutorial's fused attention (``python/tutorials/06-fused-attention.py``)
and our kernels (``kernels/triton/attention.py``, ``decode_attention.py``), what the family
modelled before it had implementations.

Models: one program per (batch, head, q block), one instruction stream per warpgroup whose
QK^T, softmax and PV wait on each other (``matrix_unit.chained_efficiency``); the tutorial's
autotuning space; the FA2-style backward of our Triton kernel (five MMAs per iteration, dQ by
fp32 atomics; P and dS through shared memory for the transposed dots, the program's warps in step,
as FA2's: ``Schedule.backward``); split-KV decode with a combine kernel.
Leaves out: Triton's instruction scheduling and register allocation (estimated), warp
specialization (Triton 3.x can, the tutorial does not ask for it)."""

from __future__ import annotations

import math
from typing import Any

from accelsim.arch.model import Chip
from accelsim.families.attention_impls.base import Impl, config, gpu_only


def decode_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    """Split-KV decode: 16-row blocks, 64-key tiles, splits to fill two programs per SM
    (at most one per 256 keys)."""
    from accelsim.families.attention import kv_split  # the family owns the split rule
    programs = p["batch"] * p["kv_heads"]
    split = max(1, min(math.ceil(2 * chip.num_cores / programs), math.ceil(p["seq_kv"] / 256)))
    return config(16, 64, 2, 4, kv_split(p["seq_kv"], split, 64)[1])


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    if p["decode"]:
        return decode_config(p, chip)
    if p["backward"]:  # the largest blocks our Triton backward compiles without spilling much (d=128)
        return config(64, 64, 2, 8)
    small = p["head_dim"] <= 64
    return config(128, 64, 3 if small else 2, 4 if small else 8)


def config_space(p: dict[str, Any], chip: Chip) -> list[dict[str, int]]:
    if p["decode"]:
        from accelsim.families.attention import kv_split
        return [config(16, bn, 2, 4, split) for split in (1, 2, 4, 8, 16, 32, 64) for bn in (32, 64, 128, 256)
                if kv_split(p["seq_kv"], split, bn)[1] == split]  # no split left without keys
    # the Triton tutorial's autotuning space
    return [config(bm, bn, stages, warps) for bm in (64, 128) for bn in (32, 64, 128) for stages in (2, 3, 4)
            for warps in (4, 8)]


IMPL = Impl(
    name="triton",
    summary="the Triton tutorial's fused kernel (FA2-style; searched over its autotuning space)",
    unavailable=gpu_only,
    default_config=default_config,
    config_space=config_space,
    fp8_p_relayout=True,
)
