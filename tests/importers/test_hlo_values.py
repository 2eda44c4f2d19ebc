"""An operand is followed back to the constant it carries through the instructions that
only move or select it; anything that computes on it is not a constant."""

import textwrap

from accelsim.importers.hlo_text import parse_module
from accelsim.importers.hlo_values import ConstantTracer, integer_values

TEXT = textwrap.dedent("""\
    HloModule m, num_partitions=1

    %inner (a: s32[2,2]) -> s32[2,2] {
      ROOT %a = s32[2,2]{1,0} parameter(0)
    }

    ENTRY %main () -> s32[2,2] {
      %table = s32[2,2]{1,0} constant({ {3, 0}, {-1, 7} })
      %elided = s32[2,2]{1,0} constant({...})
      %halves = f32[2] constant({0.5, 1.5})
      %t = (s32[2,2]{1,0}, s32[2,2]{1,0}) tuple(%elided, %table)
      %second = s32[2,2]{1,0} get-tuple-element(%t), index=1
      %moved = s32[2,2]{1,0} copy(%second)
      %called = s32[2,2]{1,0} call(%moved), to_apply=%inner
      %changed = s32[2,2]{1,0} add(%table, %table)
      ROOT %out = s32[2,2]{1,0} reshape(%called)
    }
    """)


def trace(name: str):
    module = parse_module(TEXT)
    return ConstantTracer(module).constant(module.entry_computation, name)


def test_a_tuple_element_copied_and_passed_through_a_call_is_the_constant():
    constant = trace("out")
    assert constant is not None and constant.name == "table"
    assert integer_values(constant) == [3, 0, -1, 7]


def test_computed_values_are_not_constants():
    assert trace("changed") is None


def test_elided_and_floating_point_constants_have_no_integer_values():
    assert integer_values(trace("elided")) is None
    assert integer_values(trace("halves")) is None
