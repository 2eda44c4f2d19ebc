"""Megatron-LM's attention dropout (``--attention-dropout 0.1`` by default) runs inside the fused
attention kernel: its forward and backward are asked for with ``dropout``; not in inference, not
without the framework's dropout, not for the unfused attention (whose dropout is left out)."""

from __future__ import annotations

from dataclasses import replace

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

TRAIN = Workload(mode="train", seq_len=512, batch=4)
MEGATRON = FRAMEWORKS["megatron"]


def attention_ops(model, node, framework, workload=TRAIN):
    ops = step_trace(plan_step(model, workload, Layout(tp=2, dp=4), framework, node)).programs[0].ops
    return [op for op in ops if op.family == "attention"]


def test_megatron_training_drops_out_in_both_passes(tiny, node):
    ops = attention_ops(tiny, node, MEGATRON)
    assert {op.params.get("pass", "fwd") for op in ops} == {"fwd", "bwd"}
    assert all(op.params.get("dropout") is True for op in ops)


def test_no_dropout_when_the_framework_has_none(tiny, node):
    ops = attention_ops(tiny, node, replace(MEGATRON, attention_dropout=False))
    assert ops and not any(op.params.get("dropout") for op in ops)


def test_inference_has_no_attention_dropout(tiny, node):
    ops = attention_ops(tiny, node, MEGATRON, Workload(mode="prefill", seq_len=512, batch=4))
    assert ops and not any(op.params.get("dropout") for op in ops)


def test_the_unfused_attention_is_not_asked_for_it(tiny, node):
    ops = attention_ops(tiny, node, replace(MEGATRON, attention_impl="unfused"))
    assert ops and not any(op.params.get("dropout") for op in ops)


def test_a_step_of_a_few_tokens_trains_without_it(tiny, node):
    """16 tokens a device or fewer: the family's decode kernel, which has no dropout, runs it."""
    ops = attention_ops(tiny, node, MEGATRON, Workload(mode="train", seq_len=16, batch=4))
    assert ops and not any(op.params.get("dropout") for op in ops)
