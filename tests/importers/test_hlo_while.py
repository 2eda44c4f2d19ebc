"""while loops: trip counts from backend_config or the induction-variable pattern,
unrolled with dependencies carried between trips, folded when too many ops."""

import re
import textwrap
from pathlib import Path

import pytest

from accelsim.importers.hlo import lower_module, summary, trip_count
from accelsim.importers.hlo_text import parse_module

FIXTURES = Path(__file__).parent / "fixtures"


def loop_module(trips_config: str = "", start: int = 0, bound: int = 10, step: int = 1, direction: str = "LT") -> str:
    return textwrap.dedent(f"""\
        HloModule loop, is_scheduled=true, num_partitions=2

        %add (x: f32[], y: f32[]) -> f32[] {{
          %x = f32[] parameter(0)
          %y = f32[] parameter(1)
          ROOT %s = f32[] add(%x, %y)
        }}

        %cond (p: (s32[], f32[64,64])) -> pred[] {{
          %p = (s32[], f32[64,64]{{1,0}}) parameter(0)
          %i = s32[] get-tuple-element(%p), index=0
          %n = s32[] constant({bound})
          ROOT %c = pred[] compare(%i, %n), direction={direction}
        }}

        %body (q: (s32[], f32[64,64])) -> (s32[], f32[64,64]) {{
          %q = (s32[], f32[64,64]{{1,0}}) parameter(0)
          %j = s32[] get-tuple-element(%q), index=0
          %one = s32[] constant({step})
          %next = s32[] add(%j, %one)
          %v = f32[64,64]{{1,0}} get-tuple-element(%q), index=1
          %d = f32[64,64]{{1,0}} dot(%v, %v), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
          %r = f32[64,64]{{1,0}} all-reduce(%d), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
          ROOT %t = (s32[], f32[64,64]{{1,0}}) tuple(%next, %r)
        }}

        ENTRY %main (w: f32[64,64]) -> f32[64,64] {{
          %w = f32[64,64]{{1,0}} parameter(0)
          %zero = s32[] constant({start})
          %init = (s32[], f32[64,64]{{1,0}}) tuple(%zero, %w)
          %loop = (s32[], f32[64,64]{{1,0}}) while(%init), condition=%cond, body=%body{trips_config}
          ROOT %out = f32[64,64]{{1,0}} get-tuple-element(%loop), index=1
        }}
        """)


def loop_of(text):
    module = parse_module(text)
    entry = module.entry_computation
    return trip_count(module, entry, entry.by_name()["loop"])


def test_known_trip_count_from_backend_config():
    text = loop_module(', backend_config={"known_trip_count":{"n":"7"}}')
    assert loop_of(text) == 7


@pytest.mark.parametrize(("start", "bound", "step", "direction", "trips"), [
    (0, 10, 1, "LT", 10), (0, 10, 3, "LT", 4), (2, 10, 2, "LE", 5), (10, 0, -1, "GT", 10), (5, 5, 1, "LT", 0),
])
def test_trip_count_from_the_induction_variable(start, bound, step, direction, trips):
    assert loop_of(loop_module(start=start, bound=bound, step=step, direction=direction)) == trips


def test_unrolled_trips_chain_through_the_loop_carry():
    program = lower_module(parse_module(loop_module(bound=4)))
    dots = [op for op in program.ops if op.opcode == "dot"]
    reduces = [op for op in program.ops if op.kind == "all-reduce"]
    assert len(dots) == len(reduces) == 4
    for trip in range(1, 4):
        assert dots[trip].deps == (reduces[trip - 1].name,)
    assert summary(program)["matrix_flops"] == 4 * 2 * 64**3


def test_loops_beyond_the_op_budget_fold_into_scaled_ops():
    text = loop_module(', backend_config={"known_trip_count":{"n":"1000"}}')
    program = lower_module(parse_module(text), max_ops=100)
    assert [op.opcode for op in program.ops] == ["add", "dot", "all-reduce"]  # one pass: counter, dot, reduce
    assert all(op.repeat == 1000 for op in program.ops)
    assert program.counts["folded_while_loops"] == 1
    totals = summary(program)
    assert totals["matrix_flops"] == 1000 * 2 * 64**3
    assert totals["all-reduce_bytes"] == 1000 * 64 * 64 * 4


def test_unknown_trip_count_runs_once_and_is_counted():
    text = re.sub(r"%n = s32\[\] constant\(\d+\)", "%n = s32[] parameter(1)", loop_module())
    text = text.replace("%cond (p: (s32[], f32[64,64]))", "%cond (p: (s32[], f32[64,64]), n: s32[])")
    program = lower_module(parse_module(text))
    assert program.counts["while_unknown_trip_count_run_once"] == 1
    assert len([op for op in program.ops if op.opcode == "dot"]) == 1


def test_scan_fixture_runs_its_five_trips():
    from accelsim.importers.hlo import read_hlo

    program = lower_module(read_hlo(FIXTURES / "cpu_shard_map_collectives.hlo.txt"))
    assert summary(program)["matrix_flops"] == 5 * 2 * 8 * 64 * 64


def _working_condition(text: str) -> str:
    """``loop_module`` whose condition also all-reduces the carried matrix (a convergence test)."""
    return text.replace(
        "  ROOT %c = pred[] compare(%i, %n), direction=LT\n",
        "  %v0 = f32[64,64]{1,0} get-tuple-element(%p), index=1\n"
        "  %norm = f32[64,64]{1,0} all-reduce(%v0), channel_id=2, replica_groups={{0,1}}, "
        "use_global_device_ids=true, to_apply=%add\n"
        "  ROOT %c = pred[] compare(%i, %n), direction=LT\n")


def test_a_condition_that_communicates_runs_before_every_trip_and_after_the_last():
    program = lower_module(parse_module(_working_condition(loop_module(bound=3))))
    norms = [op.name for op in program.ops if op.name.endswith(".cond/norm")]
    assert norms == [f"loop.{t}.cond/norm" for t in range(4)]
    dots = [op for op in program.ops if op.opcode == "dot"]
    assert len(dots) == 3
    for trip, dot in enumerate(dots):  # each trip waits for its check's predicate
        assert f"loop.{trip}.cond/c" in dot.deps
    assert summary(program)["all-reduce_count"] == 3 + 4
    assert program.counts["while_conditions_run"] == 1


def test_a_counter_only_condition_costs_nothing():
    program = lower_module(parse_module(loop_module(bound=3)))
    assert not [op for op in program.ops if ".cond/" in op.name]
    assert "while_conditions_run" not in program.counts


def test_a_folded_loop_scales_its_condition_by_the_checks():
    text = _working_condition(loop_module(', backend_config={"known_trip_count":{"n":"1000"}}'))
    program = lower_module(parse_module(text), max_ops=100)
    check = next(op for op in program.ops if op.name.endswith(".cond/norm"))
    assert check.repeat == 1001 and check.comm_bytes == 1001 * 64 * 64 * 4


def test_a_counter_copied_before_its_add_still_gives_the_trip_count():
    """XLA:CPU writes ``add(copy(get-tuple-element), 1)`` for a scan's counter."""
    text = loop_module(bound=6).replace(
        "  %next = s32[] add(%j, %one)\n",
        "  %jc = s32[] copy(%j)\n  %next = s32[] add(%jc, %one)\n")
    assert loop_of(text) == 6
