"""An eager framework's host issues every op of a step (Megatron-LM: PyTorch's per-op cost,
forward and backward apart) and waits on its NaN checks; the replay starts no op before
the host has issued it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accelsim.model.layout import EAGER_BACKWARD_OP_S, EAGER_FORWARD_OP_S, FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, run_step, step_trace

MEGATRON = FRAMEWORKS["megatron"]
TRAIN = Workload(mode="train", seq_len=512, batch=8)


def program(tiny, node, framework=MEGATRON, layout=Layout(tp=2, dp=4)):
    step = plan_step(tiny, TRAIN, layout, framework, node)
    return step, step_trace(step).programs[0]


def test_forward_and_backward_ops_take_their_host_cost(tiny, node):
    _, prog = program(tiny, node)
    for op in prog.ops:
        if op.kind == "done":
            assert op.host_s == 0
        elif op.name.startswith("F"):
            assert op.host_s == EAGER_FORWARD_OP_S, op.name
        elif op.name.startswith("B"):
            assert op.host_s == EAGER_BACKWARD_OP_S, op.name


def test_the_host_waits_on_each_loss_and_bucket_nan_check(tiny, node):
    step, prog = program(tiny, node)
    synced = [op.name for op in prog.ops if op.host_sync]
    losses = [n for n in synced if ".loss." in n]
    assert len(losses) == step.microbatches
    assert {n for n in synced if n.startswith("nan.")} == {op.name for op in prog.ops if op.name.startswith("nan.")}
    assert len(synced) == len(losses) + sum(op.name.startswith("nan.") for op in prog.ops)


@pytest.mark.parametrize("name", ["maxtext", "tensorrt-llm", "vllm"])
def test_frameworks_that_issue_ahead_have_no_host_timeline(name):
    fw = FRAMEWORKS[name]
    assert fw.host_forward_op_s == fw.host_backward_op_s == 0


def test_a_slow_host_bounds_the_step(tiny, node):
    """With 1 ms per op the host, not the tiny kernels, sets the step: at least the host's
    total up to the last op, and far above the step with no host time."""
    slow = replace(MEGATRON, host_forward_op_s=1e-3, host_backward_op_s=1e-3)
    step, prog = program(tiny, node, slow)
    result, _ = run_step(step, step_trace(step))
    issued = sum(op.host_s for op in prog.ops)
    free_step, _ = program(tiny, node, replace(MEGATRON, host_forward_op_s=0.0, host_backward_op_s=0.0))
    free, _ = run_step(free_step, step_trace(free_step))
    assert result.step_time_s >= issued > 10 * free.step_time_s

