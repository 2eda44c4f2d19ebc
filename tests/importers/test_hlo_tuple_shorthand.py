"""Current XLA prints element N of a tuple as ``%name#N`` in operand lists, with no
``get-tuple-element`` of its own (MaxText's compiled steps do, in while bodies)."""

import pytest

from accelsim.errors import InputError
from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module

LOOP = """HloModule m, is_scheduled=true
%body (wide.param: (s32[], f32[64,64], f32[64,64])) -> (s32[], f32[64,64], f32[64,64]) {
  %wide.param = (s32[], f32[64,64], f32[64,64]) parameter(0)
  %one = s32[] constant(1)
  %next = s32[] add(%wide.param#0, %one)
  %dot = f32[64,64] dot(%wide.param#1, %wide.param#2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (s32[], f32[64,64], f32[64,64]) tuple(%next, %dot, %wide.param#2)
}
%cond (wide.param.1: (s32[], f32[64,64], f32[64,64])) -> pred[] {
  %wide.param.1 = (s32[], f32[64,64], f32[64,64]) parameter(0)
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%wide.param.1#0, %limit), direction=LT
}
ENTRY %main (x: f32[64,64], w: f32[64,64]) -> (s32[], f32[64,64], f32[64,64]) {
  %x = f32[64,64] parameter(0)
  %w = f32[64,64] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64,64], f32[64,64]) tuple(%zero, %x, %w)
  ROOT %loop = (s32[], f32[64,64], f32[64,64]) while(%init), condition=%cond, body=%body
}
"""


def test_shorthand_operands_are_tuple_elements():
    body = parse_module(LOOP).computations["body"].by_name()
    element = body["wide.param#1"]
    assert element.opcode == "get-tuple-element" and element.operands == ("wide.param",)
    assert element.attrs["index"] == "1" and element.shape.dims == (64, 64)


def test_loop_over_shorthand_elements_runs_every_trip():
    program = lower_module(parse_module(LOOP))
    dots = [op for op in program.ops if op.opcode == "dot"]
    assert len(dots) == 3  # the trip count read through %wide.param.1#0 and %wide.param#0
    assert dots[1].deps == (dots[0].name,)  # each trip's dot reads the last one's result
    assert all(op.cost.matrix_flops == 2 * 64 ** 3 for op in dots)


@pytest.mark.parametrize("operand", ["%wide.param#3", "%wide.param#0#1", "%wide.param#x"])
def test_an_element_that_is_not_there_is_one_line(operand):
    text = LOOP.replace("dot(%wide.param#1,", f"dot({operand},")
    with pytest.raises(InputError, match="names no element of a tuple") as exc:
        parse_module(text, source="step.hlo")
    assert exc.value.line == 6 and "\n" not in exc.value.one_line()
