"""``pallas``: TPU flash attention in Pallas (JAX's ``pallas/ops/tpu/flash_attention.py``
design and our ``kernels/pallas/attention.py`` backward): a grid over (batch, head, q block,
kv block) with the kv axis sequential. The only implementation on TPUs; the family's TPU
builders are its model (``accelsim.families.attention``)."""

from __future__ import annotations

from typing import Any

from accelsim.arch.model import Chip, TpuChip
from accelsim.families.attention_impls.base import Impl, config


def _round8(x: int) -> int:
    return max(8, -(-x // 8) * 8)


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    rows = p["seq_q"] * p["group"] if p["decode"] else p["seq_q"]
    return config(min(512, _round8(rows)), min(512 if not p["decode"] else 2048, p["seq_kv"]), 2, 4)


def config_space(p: dict[str, Any], chip: Chip) -> list[dict[str, int]]:
    # decode packs a KV group's query heads as rows: a block of just those (a whole
    # number of sublane groups) runs the softmax on no padding
    rows = (128, 256, 512, 1024) if not p["decode"] else sorted({_round8(p["seq_q"] * p["group"]), 128, 256})
    return [config(bm, bn, 2, 4) for bm in rows for bn in (128, 256, 512, 1024, 2048)]


IMPL = Impl(
    name="pallas",
    summary="Pallas flash attention on TPUs (the only TPU implementation)",
    unavailable=lambda chip: None if isinstance(chip, TpuChip) else "a TPU kernel",
    default_config=default_config,
    config_space=config_space,
)
