"""fp8 attention re-lays P out in registers before the PV MMA (the QK^T accumulator's layout is
not the 8-bit A operand's): per score, byte permutes and quad shuffles on top of bf16's softmax
work, charged as time and never as useful flops."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import program_costs
from accelsim.families import get_family
from accelsim.families.attention import FP8_RELAYOUT_FLOPS_PER_SCORE, useful_flops
from accelsim.families.base import parse_values

H100 = load_arch("h100-sxm")
FAMILY = get_family("attention")


def costs(dtype: str, impl: str):
    values = parse_values(FAMILY.params, {"heads": "4", "seq_q": "1024", "seq_kv": "1024", "head_dim": "128",
                                          "dtype": dtype, "impl": impl}, "test")
    config = FAMILY.resolve_config(values, {}, H100)
    return program_costs(FAMILY.build(values, config, H100), H100), values, config


def test_fp8_forward_pays_the_relayout_per_executed_score():
    """Triton's tiles are the same in both dtypes, so the two traces differ only in the P work."""
    fp8, values, _ = costs("fp8", "triton")
    bf16, _, _ = costs("bf16", "triton")
    executed_scores = 4 * 1024 * 1024  # 1024 is a whole number of every tile here: no padding
    relayout_s = FP8_RELAYOUT_FLOPS_PER_SCORE * executed_scores / (
        H100.vector.flops_per_cycle_per_core["fp32"] * H100.clock_hz * H100.vector.efficiency)
    # the fp8 cast of P runs at the FP32 rate, bf16's at the packed bf16 rate: the rest is the relayout
    cast_s = executed_scores * (1 / H100.vector.flops_per_cycle_per_core["fp32"]
                                - 1 / H100.vector.flops_per_cycle_per_core["bf16"]) / (
        H100.clock_hz * H100.vector.efficiency)
    assert fp8.issued_vector_s.sum() - bf16.issued_vector_s.sum() == pytest.approx(relayout_s + cast_s, rel=1e-9)
    assert fp8.flops.sum() == pytest.approx(bf16.flops.sum())  # the permutes count no flops
    assert fp8.matrix_flops.sum() == pytest.approx(useful_flops(values))


def test_fp16_and_bf16_forwards_pay_the_same():
    """16-bit accumulators are already the A operand's layout: no relayout for either."""
    fp16, bf16 = costs("fp16", "triton")[0], costs("bf16", "triton")[0]
    assert fp16.issued_vector_s.sum() == pytest.approx(bf16.issued_vector_s.sum())


def test_fa3_swaps_registers_without_moving_p():
    """FlashAttention-3's default fp8 path (V row-major) swaps P's registers within a thread
    (``permute_Cregs_fp8``, a static permutation): no relayout charged; Triton pays it."""
    from accelsim.families.attention_impls import IMPLS
    assert IMPLS["triton"].fp8_p_relayout and not IMPLS["fa3"].fp8_p_relayout
    fa3 = FAMILY.build(*costs("fp8", "fa3")[1:], H100)
    relayout = [c for t in fa3.templates for step in t.steps for c in step.compute
                if c.unit == "vector" and c.flops > 0 and not c.useful]
    executed_scores = 4 * 1024 * 1024
    assert sum(c.flops for c in relayout) < FP8_RELAYOUT_FLOPS_PER_SCORE * executed_scores
