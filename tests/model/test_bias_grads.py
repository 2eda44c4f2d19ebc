"""Biases added outside their GEMMs (Megatron-LM's bias-GeLU and bias-dropout-add) have
their gradients summed over the rows by a reduction of their own: the MLP's first bias
over its activation gradient, the two output projections' over the residual branches'
gradients. Models without biases (Llama's) have none."""

from __future__ import annotations

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

TRAIN = Workload(mode="train", seq_len=512, batch=4)  # one microbatch per replica


def bias_reductions(model, node) -> list:
    ops = step_trace(plan_step(model, TRAIN, Layout(tp=2, dp=4), FRAMEWORKS["megatron"], node)).programs[0].ops
    return [op for op in ops if op.name.endswith(".dbias")]


def test_three_bias_gradients_per_layer_read_their_rows(tiny, node):
    model = tiny.model_copy(update={"linear_bias": True, "mlp": "plain"})
    reads = sorted(op.params["elements"] for op in bias_reductions(model, node)
                   if op.params["inputs"] == 1 and op.params["outputs"] == 0)
    rows = 512 // 2  # per TP rank: the sequence-parallel rows, the MLP's width shard
    assert reads == sorted([rows * model.hidden] * 2 * model.layers + [512 * model.ffn // 2] * model.layers)


def test_a_model_without_biases_has_no_reductions(tiny, node):
    assert not bias_reductions(tiny, node)
