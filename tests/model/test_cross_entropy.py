"""The training loss is Megatron-LM's vocabulary-parallel cross-entropy, pass by pass: its
kernels move the bytes its PyTorch ops do over the rank's fp32 logits, and its per-token
all-reduces run over TP only when the vocabulary is split."""

from __future__ import annotations

import math

import pytest

from dataclasses import replace

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

TRAIN = Workload(mode="train", seq_len=512, batch=8)
BYTES = {"bf16": 2, "fp32": 4}
FORWARD_BYTES_PER_LOGIT = (2 + 4) + 4 + 8 + 8 + 4 + 8
"""cast bf16 -> fp32, max, subtract, exp, sum, divide (in place on the fp32 copy)."""
BACKWARD_BYTES_PER_LOGIT = 8 + (4 + 2)
"""softmax times the loss gradient (in place), cast back to bf16."""
FUSED_FORWARD_BYTES_PER_LOGIT = (2 + 4) + 8 + 8
"""--cross-entropy-loss-fusion: cast with the max; subtract, exp and sum; divide."""
FUSED_BACKWARD_BYTES_PER_LOGIT = 4 + (4 + 2)
"""the softmax read, multiplied in place and written in bf16 too, in one kernel."""


def loss_ops(trace, prefix: str):
    return [op for op in trace.programs[0].ops if op.name.startswith(prefix) and ".loss." in op.name]


def moved_bytes(ops) -> int:
    return sum(op.params["elements"] * BYTES[op.params["dtype"]] * (op.params["inputs"] + op.params["outputs"])
               for op in ops if op.family == "elementwise")


@pytest.mark.parametrize("tp", [1, 2])
def test_loss_passes_move_megatrons_bytes(tiny, node, tp):
    layout = Layout(tp=tp, dp=8 // tp)
    trace = step_trace(plan_step(tiny, TRAIN, layout, FRAMEWORKS["megatron"], node))
    logits = TRAIN.seq_len * math.ceil(tiny.vocab / tp)  # one microbatch of one sequence, the rank's shard
    assert moved_bytes(loss_ops(trace, "F0.0.")) == FORWARD_BYTES_PER_LOGIT * logits
    assert moved_bytes(loss_ops(trace, "B0.0.")) == BACKWARD_BYTES_PER_LOGIT * logits
    reduces = [op for op in loss_ops(trace, "F0.0.") if op.kind == "all-reduce"]
    assert [op.bytes for op in reduces] == ([TRAIN.seq_len * 4.0] * 3 if tp > 1 else [])


def test_xla_fuses_the_loss(tiny, node):
    trace = step_trace(plan_step(tiny, TRAIN, Layout(dp=8), FRAMEWORKS["maxtext"], node))
    assert not loss_ops(trace, "")


@pytest.mark.parametrize("tp", [1, 2])
def test_the_fused_loss_moves_fewer_bytes_and_reduces_twice(tiny, node, tp):
    framework = replace(FRAMEWORKS["megatron"], fused_cross_entropy=True)
    trace = step_trace(plan_step(tiny, TRAIN, Layout(tp=tp, dp=8 // tp), framework, node))
    logits = TRAIN.seq_len * math.ceil(tiny.vocab / tp)
    assert moved_bytes(loss_ops(trace, "F0.0.")) == FUSED_FORWARD_BYTES_PER_LOGIT * logits
    assert moved_bytes(loss_ops(trace, "B0.0.")) == FUSED_BACKWARD_BYTES_PER_LOGIT * logits
    reduces = [op for op in loss_ops(trace, "F0.0.") if op.kind == "all-reduce"]
    assert [op.bytes for op in reduces] == ([TRAIN.seq_len * 4.0, TRAIN.seq_len * 8.0] if tp > 1 else [])
