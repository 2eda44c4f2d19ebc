"""Megatron-LM's gradient buckets (at 937571cf): before a bucket is reduced over the
replicas, its main gradient is read for the NaN check's norm and divided by DP in place;
pipeline stages after the first keep one bucket, reduced after their last backward."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accelsim.model.build import _stage_params
from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

MEGATRON = FRAMEWORKS["megatron"]
TRAIN = Workload(mode="train", seq_len=512, batch=8)


def ops_of(tiny, node, layout, framework=MEGATRON):
    step = plan_step(tiny, TRAIN, layout, framework, node)
    return step, step_trace(step).programs


def reductions(program) -> list:
    return [op for op in program.ops if op.name.startswith("gr.") and op.kind == "reduce-scatter"]


def test_each_reduction_waits_for_the_scale_which_waits_for_the_norm(tiny, node):
    _, programs = ops_of(tiny, node, Layout(tp=2, dp=4))
    ops = {op.name: op for op in programs[0].ops}
    assert reductions(programs[0])
    for rs in reductions(programs[0]):
        scale, = rs.deps
        assert scale.startswith("scale.") and ops[scale].bytes > 0
        norm, = ops[scale].deps
        assert norm.startswith("nan.")
        # fp32 main gradients: the norm reads them once, the division reads and writes them
        assert ops[scale].bytes == 2 * ops[norm].bytes == 2 * rs.bytes


def test_the_passes_cover_the_stage_gradient_buffer(tiny, node):
    step, programs = ops_of(tiny, node, Layout(tp=2, dp=4))
    norms = sum(op.bytes for op in programs[0].ops if op.name.startswith("nan."))
    assert norms == pytest.approx(_stage_params(step.shape, 0) * MEGATRON.grad_bytes)


def test_without_data_parallel_only_the_norm_runs(tiny, node):
    _, programs = ops_of(tiny, node, Layout(tp=2, micro_batch=2))
    names = [op.name for op in programs[0].ops]
    assert any(n.startswith("nan.") for n in names)
    assert not any(n.startswith(("scale.", "gr.")) for n in names)


def test_frameworks_without_them_reduce_the_gradients_directly(tiny, node):
    plain = replace(MEGATRON, grad_nan_check=False, grad_prescale=False)
    _, programs = ops_of(tiny, node, Layout(tp=2, dp=4), plain)
    names = [op.name for op in programs[0].ops]
    assert not any(n.startswith(("nan.", "scale.")) for n in names)
    assert reductions(programs[0])


def test_later_stages_reduce_one_bucket_after_their_last_backward(tiny, node):
    step, programs = ops_of(tiny, node, Layout(tp=2, pp=2, dp=2))
    first, later = reductions(programs[0]), reductions(programs[1])
    assert len(first) > 1  # a bucket per layer (and the embedding)
    bucket, = later
    assert bucket.bytes == pytest.approx(_stage_params(step.shape, 1) * MEGATRON.grad_bytes)
    names = [op.name for op in programs[1].ops]
    last_backward = max(i for i, n in enumerate(names) if n.startswith("B") and ".dw" in n)
    assert names.index(bucket.name) > last_backward


def test_per_layer_buckets_on_every_stage_without_it(tiny, node):
    framework = replace(MEGATRON, later_stages_one_bucket=False)
    _, programs = ops_of(tiny, node, Layout(tp=2, pp=2, dp=2), framework)
    assert len(reductions(programs[1])) > 1
