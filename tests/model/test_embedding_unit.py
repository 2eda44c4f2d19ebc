"""The input embedding on GPU training steps: its lookup and weight gradient are kernels,
and a weight of its own (untied, or tied across pipeline stages) is reduced over the
data-parallel replicas and updated like any other; tied to the output projection on one
stage, the shared gradient is reduced once, after the lookup's part is added in."""

from __future__ import annotations

from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, step_trace

TRAIN = Workload(mode="train", seq_len=512, batch=8)
MEGATRON = FRAMEWORKS["megatron"]


def ops_of(model, node, layout):
    return {op.name: op for op in step_trace(plan_step(model, TRAIN, layout, MEGATRON, node)).programs[0].ops}


def test_untied_embedding_is_reduced_and_updated(tiny, node):
    layout = Layout(tp=2, dp=4)
    untied = ops_of(tiny.model_copy(update={"tied_embeddings": False}), node, layout)
    tied = ops_of(tiny.model_copy(update={"tied_embeddings": True}), node, layout)
    table = tiny.vocab * tiny.hidden / layout.tp
    assert untied["gr.B1.0.embed"].bytes == table * MEGATRON.grad_bytes
    assert "gr.B1.0.embed" not in tied
    extra = untied["optimizer"].bytes - tied["optimizer"].bytes
    assert extra > 0 and untied["zero-grad"].bytes - tied["zero-grad"].bytes == table * MEGATRON.grad_bytes


def test_tied_gradient_waits_for_the_lookup(tiny, node):
    ops = ops_of(tiny.model_copy(update={"tied_embeddings": True}), node, Layout(tp=2, dp=4))
    assert "B1.0.embed.acc" in ops["nan.B1.0.head"].deps  # the bucket's NaN check, then its reduction
    assert ops["F0.0.embed.rs"].kind == "reduce-scatter" and ops["B0.0.embed.ag"].kind == "all-gather"


def test_pipeline_holds_the_embedding_on_the_first_stage(tiny, node):
    trace = step_trace(plan_step(tiny.model_copy(update={"tied_embeddings": True}), TRAIN, Layout(pp=2, dp=4),
                                 MEGATRON, node))
    first, last = ({op.name for op in p.ops} for p in trace.programs)
    # the last stage's output projection is in its one bucket (Megatron-LM's later stages)
    assert "gr.B1.0.embed" in first and "gr.B1.0.embed" not in last and "gr.B1.0.bucket" in last
