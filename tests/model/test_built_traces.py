"""Built traces are valid system traces (field by field), and conserve the model's work:
the GEMMs of every device together do exactly the matmul FLOPs the model counts."""

from __future__ import annotations

import json

import pytest

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace
from accelsim.system.trace import parse_system_trace, trace_json

MEGATRON, MAXTEXT = FRAMEWORKS["megatron"], FRAMEWORKS["maxtext"]
TRAIN = Workload(mode="train", seq_len=512, batch=8)

LAYOUTS = [
    (Layout(tp=2, pp=2, dp=2), TRAIN, MEGATRON),
    (Layout(tp=2, pp=2, dp=2, virtual_stages=2, recompute="full"), TRAIN, MEGATRON),
    (Layout(tp=2, cp=2, dp=2, recompute="selective"), TRAIN, MEGATRON),
    (Layout(tp=2, fsdp=2, dp=2), TRAIN, MAXTEXT),
    (Layout(tp=2, dp=4, zero=0), TRAIN, MEGATRON),
    (Layout(tp=4, micro_batch=8), Workload(mode="decode", seq_len=2048, batch=8), MEGATRON),
    (Layout(tp=2, pp=2, micro_batch=4), Workload(mode="prefill", seq_len=512, batch=8), MEGATRON),
]


@pytest.mark.parametrize("layout, workload, framework", LAYOUTS)
def test_valid_field_by_field(tiny, node, layout, workload, framework):
    trace = step_trace(plan_step(tiny, workload, layout, framework, node))
    assert parse_system_trace(json.loads(trace_json(trace)), "built") == trace


def test_moe_with_expert_parallel_is_valid(tiny_moe, node):
    step = plan_step(tiny_moe, TRAIN, Layout(tp=2, dp=4, ep=2), MEGATRON, node)
    trace = step_trace(step)
    assert parse_system_trace(json.loads(trace_json(trace)), "built") == trace
    assert any(op.kind == "all-to-all" for op in trace.programs[0].ops)


def gemm_flops(trace) -> float:
    total = 0.0
    for program in trace.programs:
        devices = len(program.device_ids())
        for op in program.ops:
            if op.family == "gemm":
                p = op.params
                total += 2.0 * p["M"] * p["N"] * p["K"] * p.get("batch", 1) * devices
    return total


@pytest.mark.parametrize("layout", [Layout(tp=2, pp=2, dp=2), Layout(tp=2, cp=2, dp=2), Layout(tp=2, dp=4, zero=2)])
def test_gemm_flops_are_the_models(tiny, node, layout):
    """6 x the matmul parameters x tokens: forward, data and weight gradients."""
    trace = step_trace(plan_step(tiny, TRAIN, layout, MEGATRON, node))
    assert gemm_flops(trace) == pytest.approx(6 * tiny.active_matmul_params * TRAIN.tokens, rel=1e-12)


def test_full_recompute_adds_one_forward(tiny, node):
    trace = step_trace(plan_step(tiny, TRAIN, Layout(tp=2, dp=4, recompute="full"), MEGATRON, node))
    layers = tiny.active_matmul_params - tiny.lm_head_params
    expected = (6 * tiny.active_matmul_params + 2 * layers) * TRAIN.tokens
    assert gemm_flops(trace) == pytest.approx(expected, rel=1e-12)


def test_pipeline_stages_are_programs_that_fold(tiny, node):
    trace = step_trace(plan_step(tiny, TRAIN, Layout(tp=2, pp=2, dp=2), MEGATRON, node))
    assert [p.devices for p in trace.programs] == [["0-3"], ["4-7"]]
    assert not any(op.kind in ("send", "recv") for p in trace.programs for op in p.ops)


def test_kv_heads_replicated_past_their_count(tiny, node):
    """2 KV heads on TP 4: each rank projects one KV head of its own (half the ranks repeat
    the other half's), so the QKV GEMMs do more than the model's count."""
    trace = step_trace(plan_step(tiny, TRAIN, Layout(tp=4, dp=2), MEGATRON, node))
    assert gemm_flops(trace) > 6 * tiny.active_matmul_params * TRAIN.tokens
