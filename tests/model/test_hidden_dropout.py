"""Megatron-LM's hidden dropout: each bias-dropout-add also writes a one-byte keep mask,
and the backward applies the mask in a kernel of its own; off, and in inference, the
residual adds move two bf16 arrays in and one out."""

from __future__ import annotations

import json
from dataclasses import replace

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

TRAIN = Workload(mode="train", seq_len=512, batch=4)  # one microbatch per replica
MEGATRON = FRAMEWORKS["megatron"]


def ops_of(model, node, framework, workload=TRAIN):
    return step_trace(plan_step(model, workload, Layout(tp=2, dp=4), framework, node)).programs[0].ops


def residual_adds(ops) -> list:
    return [op for op in ops if op.name.split(".")[-1] in ("add1", "add2") and op.family == "elementwise"]


def moved_bytes(op) -> int:
    size = {"int8": 1, "bf16": 2}[op.params["dtype"]]
    return op.params["elements"] * size * (op.params["inputs"] + op.params["outputs"])


def test_the_forward_adds_write_the_keep_mask(tiny, node):
    forward = [op for op in residual_adds(ops_of(tiny, node, MEGATRON)) if op.name.startswith("F")]
    rows = 512 // 2  # sequence parallel: half the tokens on each TP rank
    assert forward and all(moved_bytes(op) == rows * tiny.hidden * (3 * 2 + 1) for op in forward)


def test_the_backward_applies_the_mask_once_per_add(tiny, node):
    ops = ops_of(tiny, node, MEGATRON)
    masks = [op for op in ops if op.name.endswith(".dropout")]
    assert len(masks) == 2 * tiny.layers
    assert all(moved_bytes(op) == 256 * tiny.hidden * (2 * 2 + 1) for op in masks)


def test_without_dropout_the_adds_move_bf16_only(tiny, node):
    ops = ops_of(tiny, node, replace(MEGATRON, hidden_dropout=False))
    assert not [op for op in ops if op.name.endswith(".dropout")]
    assert all(op.params["dtype"] == "bf16" and op.params["outputs"] == 1 for op in residual_adds(ops))


def test_inference_has_no_dropout(tiny, node):
    ops = ops_of(tiny, node, MEGATRON, Workload(mode="prefill", seq_len=512, batch=4))
    assert all(op.params["dtype"] == "bf16" for op in residual_adds(ops))


def test_the_cli_trains_without_dropout_when_told(cli, config, tmp_path):
    def dropout_ops(*extra) -> int:
        trace = tmp_path / "step.json"
        r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2", "-o",
                str(trace), "--no-replay", *extra)
        assert r.code == 0, r.err
        ops = json.loads(trace.read_text())["programs"][0]["ops"]
        return sum(op["name"].endswith(".dropout") for op in ops)

    assert dropout_ops() > 0 and dropout_ops("--no-dropout") == 0
