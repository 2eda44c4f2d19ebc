"""Megatron-LM's loss report (``loss_func`` in ``pretrain_gpt.py`` at 937571cf): each
microbatch's loss and token count are all-reduced over CP, then over DP, on the compute
stream, after the loss's NaN check and before that microbatch's backward."""

from __future__ import annotations

from dataclasses import replace

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

MEGATRON = FRAMEWORKS["megatron"]
TRAIN = Workload(mode="train", seq_len=512, batch=8)


def program(tiny, node, layout, framework=MEGATRON):
    (only,) = step_trace(plan_step(tiny, TRAIN, layout, framework, node)).programs
    return only.ops


def reports(ops) -> list:
    return [op for op in ops if op.name.endswith((".loss_report.cp.ar", ".loss_report.dp.ar"))]


def test_one_blocking_data_parallel_all_reduce_per_microbatch(tiny, node):
    ops = program(tiny, node, Layout(tp=2, dp=4))
    found = reports(ops)
    assert [op.name for op in found] == ["F0.0.loss_report.dp.ar", "F1.0.loss_report.dp.ar"]  # 8 sequences over 4 replicas
    ar = found[0]
    assert ar.kind == "all-reduce" and not ar.is_async and ar.bytes == 8
    # a group per TP rank, each over the four replicas that hold the same shard
    assert sorted(sorted(g) for g in ar.groups) == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_it_follows_the_loss_check_and_precedes_the_backward(tiny, node):
    ops = program(tiny, node, Layout(tp=2, dp=4))
    names = [op.name for op in ops]
    ar = reports(ops)[0]
    (check,) = ar.deps
    assert {op.name: op for op in ops}[check].host_sync
    first_backward = min(i for i, n in enumerate(names) if n.startswith("B0.0."))
    assert names.index(check) < names.index(ar.name) < first_backward


def test_context_parallel_first_then_data_parallel(tiny, node):
    """``loss_func`` sums the loss over CP before its NaN check reads it, so the host waits
    for the CP all-reduce; the DP one follows the check."""
    ops = program(tiny, node, Layout(tp=2, cp=2, dp=2))
    cp, dp = reports(ops)[:2]
    assert cp.name.endswith(".loss_report.cp.ar") and dp.name.endswith(".loss_report.dp.ar")
    assert dp.deps == [cp.name]
    assert cp.host_sync and not dp.host_sync
    assert sorted(sorted(g) for g in dp.groups) == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_none_without_replicas_or_without_the_report(tiny, node):
    assert not reports(program(tiny, node, Layout(tp=2, micro_batch=2)))
    quiet = replace(MEGATRON, loss_report_all_reduce=False)
    assert not reports(program(tiny, node, Layout(tp=2, dp=4), quiet))
