"""cuDNN fused attention custom calls (``__cudnn$fmha*``) import as the ``attention``
family: shape, heads, causality and pass from the call, flops the family's useful count,
and a system trace that replays them."""

import textwrap

import pytest

from accelsim.arch.model import load_arch
from accelsim.families.attention import useful_flops
from accelsim.importers.hlo import lower_module, to_system_trace
from accelsim.importers.hlo_text import parse_module
from accelsim.system.replay import replay

CONFIG = ('{"operation_queue_id":"0","wait_on_operation_queues":[],"cudnn_fmha_backend_config":{"algorithm":'
          '{"algo_id":"0","math_type":"TENSOR_OP_MATH","is_cudnn_frontend":true,"workspace_size":"0"},'
          '"fmha_scale":0.088,"dropout_rate":0,"intermediate_tensor_shape":{"element_type":"BF16",'
          '"dimensions":["2","8","1024","1024"]},"mask_type":"%s"}}')
"""As XLA:GPU writes it (``jax.nn.dot_product_attention`` with the cuDNN implementation):
the logits' shape [batch, heads, seq_q, seq_kv] and the mask type."""

FORWARD_AND_BACKWARD = """
    %q = bf16[2,1024,8,128]{3,2,1,0} parameter(0)
    %k = bf16[2,1024,2,128]{3,2,1,0} parameter(1)
    %v = bf16[2,1024,2,128]{3,2,1,0} parameter(2)
    %do = bf16[2,1024,8,128]{3,2,1,0} parameter(3)
    %fwd = (bf16[2,8,1024,128]{3,1,2,0}, f32[2,8,1024]{2,1,0}, u8[0]{0}) custom-call(%q, %k, %v), custom_call_target="__cudnn$fmhaSoftmax", backend_config=CFG
    %o = bf16[2,8,1024,128]{3,1,2,0} get-tuple-element(%fwd), index=0
    %lse = f32[2,8,1024]{2,1,0} get-tuple-element(%fwd), index=1
    %bwd = (bf16[2,1024,8,128]{3,2,1,0}, bf16[2,1024,2,128]{3,2,1,0}, bf16[2,1024,2,128]{3,2,1,0}, u8[0]{0}) custom-call(%q, %k, %v, %lse, %do, %o), custom_call_target="__cudnn$fmhaSoftmaxBackward", backend_config=CFG
    ROOT %dq = bf16[2,1024,8,128]{3,2,1,0} get-tuple-element(%bwd), index=0
"""


def program(mask: str = "CAUSAL"):
    body = FORWARD_AND_BACKWARD.replace("CFG", CONFIG % mask)
    text = "HloModule m, num_partitions=1\nENTRY %main () -> bf16[] {\n" + textwrap.dedent(body) + "}\n"
    return lower_module(parse_module(text))


@pytest.mark.parametrize("mask, causal", [("CAUSAL", True), ("PADDING_CAUSAL", True), ("NO_MASK", False)])
def test_forward_and_backward_become_the_attention_family(mask, causal):
    ops = {op.name: op for op in program(mask).ops}
    expected = {"batch": 2, "heads": 8, "kv_heads": 2, "seq_q": 1024, "seq_kv": 1024, "head_dim": 128,
                "causal": causal, "dtype": "bf16"}
    for name, pass_ in (("fwd", "fwd"), ("bwd", "bwd")):
        op = ops[name]
        params = dict(op.params)
        assert op.family == "attention" and params == {**expected, "pass": pass_}
        assert op.cost.matrix_flops == useful_flops(params)
    assert ops["bwd"].cost.matrix_flops == 2.5 * ops["fwd"].cost.matrix_flops


def test_the_trace_replays_with_the_family_and_counts_the_calls():
    hlo = program()
    assert hlo.counts["attention_family:fwd"] == hlo.counts["attention_family:bwd"] == 1
    assert not any(key.startswith("unknown_custom_call") for key in hlo.counts)
    trace = to_system_trace(hlo)
    attention = [op for op in trace.programs[0].ops if op.family == "attention"]
    assert [op.params["pass"] for op in attention] == ["fwd", "bwd"]
    assert all(op.params["config"] == "auto" for op in attention)
    result = replay(trace, load_arch("dgx-h100"))
    assert result.step_time_s > 0


def test_a_call_without_its_shape_stays_an_unknown_custom_call():
    text = FORWARD_AND_BACKWARD.replace("CFG", '{"cudnn_fmha_backend_config":{"mask_type":"CAUSAL"}}')
    hlo = lower_module(parse_module("HloModule m, num_partitions=1\nENTRY %main () -> bf16[] {\n"
                                    + textwrap.dedent(text) + "}\n"))
    assert all(op.family is None for op in hlo.ops)
    assert hlo.counts["unknown_custom_call:__cudnn$fmhaSoftmax"] == 1


def test_a_folded_loop_runs_its_trips_as_one_call_over_trips_times_the_batch():
    config = (CONFIG % "CAUSAL").replace('["2","8","1024","1024"]', '["1","2","128","128"]')
    text = textwrap.dedent("""\
        HloModule loop, num_partitions=1

        %cond (p: (s32[], bf16[1,128,2,64])) -> pred[] {
          %p = (s32[], bf16[1,128,2,64]{3,2,1,0}) parameter(0)
          %i = s32[] get-tuple-element(%p), index=0
          %n = s32[] constant(12)
          ROOT %c = pred[] compare(%i, %n), direction=LT
        }

        %body (q: (s32[], bf16[1,128,2,64])) -> (s32[], bf16[1,128,2,64]) {
          %q = (s32[], bf16[1,128,2,64]{3,2,1,0}) parameter(0)
          %j = s32[] get-tuple-element(%q), index=0
          %one = s32[] constant(1)
          %next = s32[] add(%j, %one)
          %x = bf16[1,128,2,64]{3,2,1,0} get-tuple-element(%q), index=1
          %attn = (bf16[1,128,2,64]{3,2,1,0}, u8[0]{0}) custom-call(%x, %x, %x), custom_call_target="__cudnn$fmhaSoftmax", backend_config=CFG
          %y = bf16[1,128,2,64]{3,2,1,0} get-tuple-element(%attn), index=0
          ROOT %t = (s32[], bf16[1,128,2,64]{3,2,1,0}) tuple(%next, %y)
        }

        ENTRY %main (w: bf16[1,128,2,64]) -> bf16[1,128,2,64] {
          %w = bf16[1,128,2,64]{3,2,1,0} parameter(0)
          %zero = s32[] constant(0)
          %init = (s32[], bf16[1,128,2,64]{3,2,1,0}) tuple(%zero, %w)
          %loop = (s32[], bf16[1,128,2,64]{3,2,1,0}) while(%init), condition=%cond, body=%body
          ROOT %out = bf16[1,128,2,64]{3,2,1,0} get-tuple-element(%loop), index=1
        }
        """).replace("CFG", config)
    folded = lower_module(parse_module(text), max_ops=2)
    unrolled = lower_module(parse_module(text))
    (attention,) = [op for op in folded.ops if op.family == "attention"]
    assert dict(attention.params)["batch"] == 12 and attention.repeat == 12
    calls = [op for op in unrolled.ops if op.family == "attention"]
    assert len(calls) == 12 and all(dict(op.params)["batch"] == 1 for op in calls)
    assert attention.cost.matrix_flops == sum(op.cost.matrix_flops for op in calls)
