"""A splash attention call runs the blocks its ``block_mask`` marks nonzero: the importer
follows that operand back to its constant (sliced per shard, carried into a loop,
prefetched, as MaxText's compiled steps pass it) and counts only those blocks."""

import textwrap

import pytest

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module

B, H, S, D = 1, 4, 2048, 128
QKV = f"bf16[{B},{H},{S},{D}]{{3,2,1,0}}"
CAUSAL = "{ {1,0,0,0}, {2,1,0,0}, {2,2,1,0}, {2,2,2,1} }"
"""Per shard: 0 skipped, 1 the diagonal's partial block, 2 full (10 of 16 run)."""
DATA_NEXT = "{ {0,0,0,0}, {0,1,1,1}, {0,1,2,2}, {0,1,2,3} }"
DENSE_FLOPS = 2 * 2 * B * H * S * S * D  # the forward's two matmuls over every pair


def module(mask_literal: str, body_changes_mask: bool = False) -> str:
    shards = f"{{ {mask_literal}, {mask_literal} }}"
    next_shards = f"{{ {DATA_NEXT}, {DATA_NEXT} }}"
    mask_out = "%mask.new" if body_changes_mask else "%mask"
    return textwrap.dedent(f"""\
        HloModule m, is_scheduled=true, num_partitions=2

        %slice_shard (c: s8[2,4,4], i: s32[]) -> s8[1,4,4] {{
          %c = s8[2,4,4]{{2,1,0}} parameter(0)
          %i = s32[] parameter(1)
          %zero = s32[] constant(0)
          ROOT %ds = s8[1,4,4]{{2,1,0}} dynamic-slice(%c, %i, %zero, %zero), dynamic_slice_sizes={{1,4,4}}
        }}

        %body (p: (s32[], s8[1,4,4], s8[1,4,4], {QKV})) -> (s32[], s8[1,4,4], s8[1,4,4], {QKV}) {{
          %p = (s32[], s8[1,4,4]{{2,1,0}}, s8[1,4,4]{{2,1,0}}, {QKV}) parameter(0)
          %n = s32[] get-tuple-element(%p), index=0
          %next = s8[1,4,4]{{2,1,0}} get-tuple-element(%p), index=1
          %mask = s8[1,4,4]{{2,1,0}} get-tuple-element(%p), index=2
          %q = {QKV} get-tuple-element(%p), index=3
          %cs = (s8[1,4,4]{{2,1,0:S(1)}}, s8[1,4,4]{{2,1,0}}, u32[]) copy-start(%mask)
          %cd = s8[1,4,4]{{2,1,0:S(1)}} copy-done(%cs)
          %splash_mha_fwd.1 = ({QKV}, f32[{B},{H},{S},128]{{3,2,1,0}}) custom-call(%next, %cd, %q, %q, %q), custom_call_target="tpu_custom_call", backend_config={{"custom_call_config":{{"body":"TUzv"}}}}
          %one = s32[] constant(1)
          %n.1 = s32[] add(%n, %one)
          %mask.new = s8[1,4,4]{{2,1,0}} add(%mask, %mask)
          ROOT %t = (s32[], s8[1,4,4]{{2,1,0}}, s8[1,4,4]{{2,1,0}}, {QKV}) tuple(%n.1, %next, {mask_out}, %q)
        }}

        %cond (p: (s32[], s8[1,4,4], s8[1,4,4], {QKV})) -> pred[] {{
          %p = (s32[], s8[1,4,4]{{2,1,0}}, s8[1,4,4]{{2,1,0}}, {QKV}) parameter(0)
          %n = s32[] get-tuple-element(%p), index=0
          %limit = s32[] constant(3)
          ROOT %lt = pred[] compare(%n, %limit), direction=LT
        }}

        ENTRY %main (q: {QKV}) -> s32[] {{
          %q = {QKV} parameter(0)
          %pid = u32[] partition-id()
          %shard = s32[] convert(%pid)
          %next.all = s8[2,4,4]{{2,1,0}} constant({next_shards})
          %mask.all = s8[2,4,4]{{2,1,0}} constant({shards})
          %next.shard = s8[1,4,4]{{2,1,0}} fusion(%next.all, %shard), kind=kLoop, calls=%slice_shard
          %mask.shard = s8[1,4,4]{{2,1,0}} fusion(%mask.all, %shard), kind=kLoop, calls=%slice_shard
          %zero = s32[] constant(0)
          %init = (s32[], s8[1,4,4]{{2,1,0}}, s8[1,4,4]{{2,1,0}}, {QKV}) tuple(%zero, %next.shard, %mask.shard, %q)
          %loop = (s32[], s8[1,4,4]{{2,1,0}}, s8[1,4,4]{{2,1,0}}, {QKV}) while(%init), condition=%cond, body=%body
          ROOT %trips = s32[] get-tuple-element(%loop), index=0
        }}
        """)


def splash_ops(text: str):
    program = lower_module(parse_module(text), max_ops=100000)
    return program, [op for op in program.ops if "splash" in op.name]


def test_a_causal_block_mask_runs_10_of_16_blocks_in_every_trip():
    program, ops = splash_ops(module(CAUSAL))
    assert len(ops) == 3
    assert all(op.cost.matrix_flops == pytest.approx(DENSE_FLOPS * 10 / 16) for op in ops)
    assert all(op.cost.vector_flops == pytest.approx(B * H * S * S * 10 / 16) for op in ops)
    assert program.counts["splash_attention:fwd"] == 3  # one per trip
    assert "splash_attention_dense:fwd" not in program.counts


def test_an_elided_constant_counts_every_block_and_says_so():
    program, ops = splash_ops(module("{...}").replace("constant({ {...}, {...} })", "constant({...})"))
    assert all(op.cost.matrix_flops == DENSE_FLOPS for op in ops)
    assert program.counts["splash_attention_dense:fwd"] == 3


def test_a_mask_the_loop_changes_is_not_a_constant():
    program, ops = splash_ops(module(CAUSAL, body_changes_mask=True))
    assert all(op.cost.matrix_flops == DENSE_FLOPS for op in ops)
    assert program.counts["splash_attention_dense:fwd"] == 3
