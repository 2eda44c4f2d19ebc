"""Bad HLO input: one clear line and exit status 2, never a traceback; unknown opcodes
and custom calls are counted, not fatal."""

from pathlib import Path

import pytest

from accelsim.errors import InputError
from accelsim.importers.hlo import lower_module, read_hlo
from accelsim.importers.hlo_text import parse_module

GOOD = (Path(__file__).parent / "fixtures" / "cpu_mlp_grad_dp2_tp4.hlo.txt").read_text()
CYCLE = """HloModule m
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %x = f32[4]{0} add(%p, %y)
  %y = f32[4]{0} add(%p, %x)
}
"""
RECURSION = """HloModule m
%body (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %w = f32[4]{0} call(%p), to_apply=%body
}
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} call(%p), to_apply=%body
}
"""

WHILE = """HloModule m
%cond (p: s32[]) -> pred[] {
  %p = s32[] parameter(0)
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%p, %n), direction=LT
}
%body (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %next = s32[] add(%p, %one)
}
ENTRY %main (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  ROOT %w = s32[] while(%p), condition=%cond, body=%body
}
"""


@pytest.mark.parametrize(("text", "message"), [
    ("", "not HLO text"),
    ('{"schema_version": 1}', "not HLO text"),
    (GOOD[: len(GOOD) // 2].rsplit("\n", 1)[0], "truncated HLO"),
    (GOOD[: GOOD.index("ENTRY")], "no ENTRY computation"),
    (GOOD.replace("%add.6 = f32[] add(%x.8, %y.6)", "%add.6 = f32[] add(%x.8, %nope)"), "undefined operand 'nope'"),
    (GOOD.replace("to_apply=%add.clone_promoted", "to_apply=%gone"), "undefined computation 'gone'"),
    (GOOD.replace("f32[8,32]{1,0} tanh(", "f99[8,32]{1,0} tanh("), "expected an HLO element type"),
    (GOOD.replace("replica_groups={{0,1,2,3},{4,5,6,7}}", "replica_groups={{0,1,2,3},{4,5,6,9}}"), "outside"),
    (CYCLE, "'x' depends on itself"),
    (RECURSION, "computation 'body' calls itself"),
    (WHILE.replace("condition=%cond, ", ""), "while 'w' has no condition="),
    (WHILE.replace(", body=%body", ""), "while 'w' has no body="),
    (WHILE.replace("  %one = s32[] constant(1)\n", "  %one = s32[] constant(1)\n  %one = s32[] constant(2)\n"),
     "instruction 'one' is defined twice"),
    (WHILE + WHILE[WHILE.index("ENTRY"):].replace("%main", "%main2"), "a second ENTRY computation"),
    (WHILE + WHILE[WHILE.index("%body"):WHILE.index("ENTRY")], "computation 'body' is defined twice"),
    (WHILE.replace("body=%body\n", 'body=%body, backend_config={"known_trip_count":{"n":"-5"}}\n'),
     "known_trip_count: expected a whole number of trips, got '-5'"),
])
def test_bad_text_is_one_located_line(text, message):
    """(Cycles: the importer would not end; each is refused at a line of the cycle.)"""
    with pytest.raises(InputError, match=message) as info:
        lower_module(parse_module(text, source="step.hlo"))
    line = info.value.one_line()
    assert "\n" not in line and line.startswith("step.hlo")


def test_unknown_opcodes_and_custom_calls_are_counted():
    program = lower_module(read_hlo(Path(__file__).parent / "fixtures" / "gpu_async_handwritten.hlo.txt"))
    assert program.counts["unknown_opcode:future-opcode"] == 1
    assert program.counts["unknown_custom_call:my_vendor_kernel"] == 1
    weird = next(op for op in program.ops if op.opcode == "future-opcode")
    assert weird.cost.bytes == 2 * 1024 * 4  # estimated from its operand and output
    assert weird.ctrl_deps == ("fp8",)  # control-predecessors kept


def test_cli_bad_file_exits_2_with_one_line(cli, tmp_path):
    bad = tmp_path / "step.hlo"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    result = cli("import", "hlo", str(bad), "--system", "dgx-h100", "-o", str(tmp_path / "t.json"))
    assert result.code == 2
    assert result.err.count("\n") == 1 and str(bad) in result.err


def test_cli_module_larger_than_the_system_is_refused(cli, tmp_path):
    hlo = Path(__file__).parent / "fixtures" / "cpu_mlp_grad_dp2_tp4.hlo.txt"
    result = cli("import", "hlo", str(hlo), "--system", "dgx-h100", "--set", "gpus=4", "-o", str(tmp_path / "t.json"))
    assert result.code == 2
    assert "runs on 8 devices" in result.err and "has 4" in result.err
    assert not (tmp_path / "t.json").exists()


def test_instructions_listed_before_their_operands_are_put_in_order():
    text = """HloModule m
ENTRY %main (p: f32[4]) -> f32[4] {
  ROOT %y = f32[4]{0} multiply(%x, %x)
  %x = f32[4]{0} add(%p, %p)
  %p = f32[4]{0} parameter(0)
}
"""
    module = parse_module(text, source="order.hlo")
    assert [i.name for i in module.entry_computation.instructions] == ["p", "x", "y"]
    assert len([op for op in lower_module(module).ops if op.kind == "compute"]) == 2


def test_nesting_too_deep_to_walk_names_the_file(tmp_path):
    from accelsim.importers.hlo import import_hlo

    deep = "(" * 50000 + "f32[]" + ")" * 50000
    path = tmp_path / "deep.hlo"
    path.write_text(WHILE.replace("  %p = s32[] parameter(0)\n  ROOT %w", f"  %p = s32[] parameter(0)\n  %d = {deep} "
                                  "parameter(1)\n  ROOT %w"))
    with pytest.raises(InputError, match="nested too deeply") as info:
        import_hlo(path)
    assert info.value.source == str(path)


def test_a_conditional_that_names_no_branch(tmp_path):
    """Found by fuzzing: a conditional whose branch attribute is garbled named no
    computation, and choosing its costliest branch raised on an empty list."""
    text = """HloModule m
%b (x: f32[4]) -> f32[4] {
  ROOT %x = f32[4]{0} parameter(0)
}
ENTRY %main (p: pred[], v: f32[4]) -> f32[4] {
  %p = pred[] parameter(0)
  %v = f32[4]{0} parameter(1)
  ROOT %c = f32[4]{0} conditional(%p, %v, %v), 0 false_computation=%b
}
"""
    with pytest.raises(InputError) as exc:
        parse_module(text, "m.hlo")
    assert exc.value.line == 8 and "instruction 'c': a conditional names its branches" in exc.value.message
