"""Megatron-LM's gradient-accumulation fusion: every weight-gradient GEMM adds into the fp32
main gradient (reads and writes it); data-gradient and forward GEMMs keep the weights'
dtype and write C alone."""

from __future__ import annotations

from dataclasses import replace

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

TRAIN = Workload(mode="train", seq_len=512, batch=8)


def gemm_out_dtypes(model, node, framework) -> dict[bool, set]:
    ops = step_trace(plan_step(model, TRAIN, Layout(tp=2, dp=4), framework, node)).programs[0].ops
    out: dict[bool, set] = {True: set(), False: set()}
    for op in ops:
        if op.family == "gemm":
            out[op.name.endswith(".dw")].add((op.params.get("out_dtype", "auto"), op.params.get("accumulate", False)))
    return out


def test_weight_gradients_add_into_fp32(tiny, node):
    assert gemm_out_dtypes(tiny, node, FRAMEWORKS["megatron"]) == {True: {("fp32", True)}, False: {("auto", False)}}


def test_without_the_fusion_they_write_the_weights_dtype(tiny, node):
    framework = replace(FRAMEWORKS["megatron"], wgrad_into_main_grad=False)
    assert gemm_out_dtypes(tiny, node, framework) == {True: {("auto", False)}, False: {("auto", False)}}
