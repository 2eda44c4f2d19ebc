"""call, conditional, send/recv and async copies: how each becomes ops."""

import textwrap

from accelsim.importers.hlo import BranchRates, lower_module
from accelsim.importers.hlo_text import parse_module

HEAD = """HloModule m, is_scheduled=true, num_partitions=4

%double (a: f32[256]) -> f32[256] {
  %a = f32[256]{0} parameter(0)
  ROOT %twice = f32[256]{0} add(%a, %a)
}

%cheap (b: f32[256]) -> f32[256] {
  %b = f32[256]{0} parameter(0)
  ROOT %n = f32[256]{0} negate(%b)
}

%costly (c: f32[256]) -> f32[256] {
  %c = f32[256]{0} parameter(0)
  %e = f32[256]{0} exponential(%c)
  ROOT %l = f32[256]{0} log(%e)
}
"""


def lowered(entry: str):
    text = HEAD + "\nENTRY %main (x: f32[256], i: s32[]) -> f32[256] {\n" + textwrap.dedent(entry) + "}\n"
    program = lower_module(parse_module(text))
    return program, {op.name: op for op in program.ops}


def test_call_is_inlined_with_its_argument_dependencies():
    _, ops = lowered("""
        %x = f32[256]{0} parameter(0)
        %y = f32[256]{0} sine(%x)
        ROOT %r = f32[256]{0} call(%y), to_apply=%double
    """)
    assert ops["r/twice"].deps == ("y",)


def test_conditional_takes_the_costliest_branch_after_its_predicate():
    program, ops = lowered("""
        %x = f32[256]{0} parameter(0)
        %i = s32[] parameter(1)
        %k = s32[] add(%i, %i)
        ROOT %r = f32[256]{0} conditional(%k, %x, %x), branch_computations={%cheap, %costly}
    """)
    assert [op.name for op in program.ops] == ["k", "r.costly/e", "r.costly/l"]
    assert ops["r.costly/e"].deps == ("k",)
    assert program.counts["conditionals_costliest_branch"] == 1


def test_send_becomes_a_permute_that_the_recv_waits_for():
    _, ops = lowered("""
        %x = f32[256]{0} parameter(0)
        %tok = token[] after-all()
        %s = (f32[256]{0}, u32[], token[]) send(%x, %tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,3}}"}
        %r = (f32[256]{0}, u32[], token[]) recv(%tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,3}}"}
        %sd = token[] send-done(%s), channel_id=5
        %rd = (f32[256]{0}, token[]) recv-done(%r), channel_id=5
        %v = f32[256]{0} get-tuple-element(%rd), index=0
        ROOT %use = f32[256]{0} negate(%v)
    """)
    assert ops["s"].kind == "collective-permute"
    assert ops["s"].pairs == ((0, 1), (1, 2), (2, 3))
    assert ops["s"].comm_bytes == 256 * 4
    assert "s" in ops["use"].deps


def test_async_copy_runs_on_its_own_stream():
    _, ops = lowered("""
        %x = f32[256]{0} parameter(0)
        %cs = (f32[256]{0}, f32[256]{0}, u32[]) copy-start(%x)
        %busy = f32[256]{0} sine(%x)
        %cd = f32[256]{0} copy-done(%cs)
        ROOT %use = f32[256]{0} add(%cd, %busy)
    """)
    assert ops["cs"].stream != ops["busy"].stream
    assert ops["cs"].cost.bytes == 2 * 256 * 4
    assert set(ops["use"].deps) == {"cs", "busy"}


def test_a_branch_with_a_loop_weighs_its_trips():
    """Branch ``looped`` runs a 16^3 dot 100 times (819,200 flops), branch ``once`` one
    32x64x32 dot (131,072 flops): the costliest is the loop, counted per trip."""
    text = textwrap.dedent("""\
        HloModule m, is_scheduled=true, num_partitions=1

        %cond (p: (s32[], f32[16,16])) -> pred[] {
          %p = (s32[], f32[16,16]{1,0}) parameter(0)
          %i = s32[] get-tuple-element(%p), index=0
          %n = s32[] constant(100)
          ROOT %c = pred[] compare(%i, %n), direction=LT
        }

        %body (q: (s32[], f32[16,16])) -> (s32[], f32[16,16]) {
          %q = (s32[], f32[16,16]{1,0}) parameter(0)
          %j = s32[] get-tuple-element(%q), index=0
          %one = s32[] constant(1)
          %next = s32[] add(%j, %one)
          %v = f32[16,16]{1,0} get-tuple-element(%q), index=1
          %d = f32[16,16]{1,0} dot(%v, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          ROOT %t = (s32[], f32[16,16]{1,0}) tuple(%next, %d)
        }

        %looped (a: f32[16,16]) -> f32[16,16] {
          %a = f32[16,16]{1,0} parameter(0)
          %zero = s32[] constant(0)
          %init = (s32[], f32[16,16]{1,0}) tuple(%zero, %a)
          %loop = (s32[], f32[16,16]{1,0}) while(%init), condition=%cond, body=%body
          ROOT %out = f32[16,16]{1,0} get-tuple-element(%loop), index=1
        }

        %once (b: f32[16,16]) -> f32[16,16] {
          %b = f32[16,16]{1,0} parameter(0)
          %l = f32[32,64]{1,0} broadcast(%b), dimensions={}
          %r = f32[64,32]{1,0} broadcast(%b), dimensions={}
          %m = f32[32,32]{1,0} dot(%l, %r), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          ROOT %s = f32[16,16]{1,0} slice(%m), slice={[0:16], [0:16]}
        }

        ENTRY %main (x: f32[16,16], k: s32[]) -> f32[16,16] {
          %x = f32[16,16]{1,0} parameter(0)
          %k = s32[] parameter(1)
          ROOT %r = f32[16,16]{1,0} conditional(%k, %x, %x), branch_computations={%looped, %once}
        }
        """)
    program = lower_module(parse_module(text))
    dots = [op for op in program.ops if op.opcode == "dot"]
    assert len(dots) == 100 and all(op.name.startswith("r.looped/") for op in dots)


def test_with_rates_a_branch_is_weighed_by_its_time_communication_included():
    """A branch that all-reduces 16 MiB (37 us at 450 GB/s) outweighs one that takes the
    exp and log of it (two passes over HBM, 22 us at 3 TB/s); by flops alone (no rates),
    8.4 M against the reduction's 4.2 M, the exp branch wins."""
    text = textwrap.dedent("""\
        HloModule m, is_scheduled=true, num_partitions=4

        %add (x: f32[], y: f32[]) -> f32[] {
          %x = f32[] parameter(0)
          %y = f32[] parameter(1)
          ROOT %s = f32[] add(%x, %y)
        }

        %talk (a: f32[4194304]) -> f32[4194304] {
          %a = f32[4194304]{0} parameter(0)
          ROOT %r = f32[4194304]{0} all-reduce(%a), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add
        }

        %think (b: f32[4194304]) -> f32[4194304] {
          %b = f32[4194304]{0} parameter(0)
          %e = f32[4194304]{0} exponential(%b)
          ROOT %l = f32[4194304]{0} log(%e)
        }

        ENTRY %main (x: f32[4194304], i: s32[]) -> f32[4194304] {
          %x = f32[4194304]{0} parameter(0)
          %i = s32[] parameter(1)
          ROOT %r = f32[4194304]{0} conditional(%i, %x, %x), branch_computations={%think, %talk}
        }
        """)
    rates = BranchRates(flop_s=1 / 1e15, byte_s=1 / 3e12, comm_byte_s=1 / 450e9)
    chosen = lower_module(parse_module(text), rates=rates)
    assert [op.kind for op in chosen.ops] == ["all-reduce"]
    by_flops = lower_module(parse_module(text))
    assert "all-reduce" not in [op.kind for op in by_flops.ops]
    # a 16 KiB all-reduce weighs less than that exp: the compute branch again
    small = text.replace("all-reduce(%a)", "all-reduce(%a2)").replace(
        "  ROOT %r = f32[4194304]{0} all-reduce", "  %a2 = f32[4096]{0} slice(%a), slice={[0:4096]}\n"
        "  %r2 = f32[4096]{0} all-reduce").replace(
        "use_global_device_ids=true, to_apply=%add\n}", "use_global_device_ids=true, to_apply=%add\n"
        "  ROOT %r = f32[4194304]{0} pad(%r2, %z), padding=0_4190208\n  %z = f32[] constant(0)\n}")
    assert "all-reduce" not in [op.kind for op in lower_module(parse_module(small), rates=rates).ops]
