"""HLO shapes: element types and their sizes, tuples, layouts, and bad shapes."""

import pytest

from accelsim.errors import InputError
from accelsim.importers.hlo_text import parse_instruction, shape_from_text


@pytest.mark.parametrize(("text", "dtype", "dims", "size"), [
    ("f32[8,128]{1,0}", "f32", (8, 128), 4096),
    ("bf16[2,3,4]{2,1,0}", "bf16", (2, 3, 4), 48),
    ("f8e4m3fn[16]{0}", "f8e4m3fn", (16,), 16),
    ("f8e5m2[4,4]", "f8e5m2", (4, 4), 16),
    ("s4[10]{0}", "s4", (10,), 5),
    ("pred[]", "pred", (), 1),
    ("f32[]", "f32", (), 4),
    ("bf16[128,256]{1,0:T(8,128)(2,1)S(1)}", "bf16", (128, 256), 65536),
    ("f32[<=64,8]{1,0}", "f32", (64, 8), 2048),
])
def test_array_shapes(text, dtype, dims, size):
    shape = shape_from_text(text)
    assert (shape.dtype, shape.dims, shape.size_bytes) == (dtype, dims, size)


def test_nested_tuple_sums_its_leaves():
    shape = shape_from_text("((f32[4]{0}, bf16[2,2]{1,0}), s32[], token[])")
    assert shape.is_tuple
    assert [leaf.dtype for leaf in shape.leaves()] == ["f32", "bf16", "s32", "token"]
    assert shape.size_bytes == 16 + 8 + 4 + 0


def test_instruction_with_tuple_shape_comments_and_attributes():
    inst = parse_instruction(
        'ROOT %t.1 = (f32[2]{0}, /*index=1*/s8[4]{0}) custom-call(%a, /*index=1*/%b), '
        'custom_call_target="x", metadata={op_name="jit(f)/a,b=c" source_line=3}', "f.hlo", 7)
    assert inst.is_root and inst.name == "t.1" and inst.opcode == "custom-call"
    assert inst.operands == ("a", "b")
    assert inst.shape.size_bytes == 8 + 4
    assert inst.attrs["custom_call_target"] == '"x"'
    assert inst.attrs["metadata"].startswith("{op_name=")


@pytest.mark.parametrize("text", ["q32[4]", "f32[4", "f32[a]", "(f32[2]"])
def test_bad_shapes_name_what_was_expected(text):
    with pytest.raises(InputError, match="expected"):
        shape_from_text(text, "m.hlo", 3)
