"""TPU layouts: tiles padded whole (XLA's tiled layout) and memory spaces (``S(1)`` is
VMEM): HBM traffic counts only arrays in HBM, as stored; on-chip bytes are kept apart."""

import pytest

from accelsim.importers.hlo import lower_module, summary
from accelsim.importers.hlo_text import parse_module, shape_from_text


@pytest.mark.parametrize(("text", "stored", "space"), [
    ("bf16[128,256]{1,0:T(8,128)(2,1)}", 65536, 0),  # whole tiles: no padding
    ("bf16[3,100]{1,0:T(8,128)(2,1)}", 8 * 128 * 2, 0),  # one 8x128 tile
    ("f32[100,3]{0,1:T(8,128)}", 8 * 128 * 4, 0),  # dimension 0 minor: tiles of (3, 100)
    ("s32[]{:T(128)}", 128 * 4, 0),  # a scalar fills a 128-wide tile
    ("f32[2048]{0:T(1024)S(1)}", 2048 * 4, 1),
    ("s32[2,512]{1,0:T(2,128)S(2)}", 2 * 512 * 4, 2),
    ("f32[5,7]{1,0}", 5 * 7 * 4, 0),  # no tiles: as written
    ("bf16[4,8,130]{2,1,0:T(8,128)(2,1)}", 4 * 8 * 256 * 2, 0),  # the major dimension is not tiled
    ("f32[10]{0:T(*,4)}", 12 * 4, 0),  # a combined (*) dimension pads nothing
])
def test_stored_bytes_and_space(text, stored, space):
    shape = shape_from_text(text)
    assert shape.stored_bytes == stored
    assert shape.memory_space == space


def test_layout_is_not_part_of_equality():
    assert shape_from_text("f32[8]{0:T(128)S(1)}") == shape_from_text("f32[8]{0}")


MODULE = """HloModule m, is_scheduled=true
%fused (a: f32[3,100], b: f32[3,100]) -> f32[3,100] {
  %a = f32[3,100]{1,0:T(8,128)} parameter(0)
  %b = f32[3,100]{1,0:T(8,128)} parameter(1)
  ROOT %s = f32[3,100]{1,0:T(8,128)} add(%a, %b)
}
ENTRY %main (p: f32[3,100], q: f32[3,100]) -> f32[3,100] {
  %p = f32[3,100]{1,0:T(8,128)} parameter(0)
  %q = f32[3,100]{1,0:T(8,128)S(1)} parameter(1)
  %prefetch = (f32[3,100]{1,0:T(8,128)S(1)}, f32[3,100]{1,0:T(8,128)}, u32[]{:S(2)}) copy-start(%p)
  %in_vmem = f32[3,100]{1,0:T(8,128)S(1)} copy-done(%prefetch)
  ROOT %f = f32[3,100]{1,0:T(8,128)} fusion(%in_vmem, %q), kind=kLoop, calls=%fused
}
"""
TILE_BYTES = 8 * 128 * 4  # f32[3,100] in one 8x128 tile
LOGICAL = 3 * 100 * 4


def ops():
    return {op.name: op for op in lower_module(parse_module(MODULE)).ops}


def test_vmem_operands_are_not_hbm_traffic():
    fusion = ops()["f"].cost
    assert fusion.bytes_read == 0 and fusion.bytes_written == TILE_BYTES
    assert fusion.on_chip_bytes == 2 * TILE_BYTES


def test_a_prefetch_reads_hbm_and_writes_vmem():
    prefetch = ops()["prefetch"]
    assert prefetch.stream == "async_compute"
    assert prefetch.cost.bytes_read == TILE_BYTES and prefetch.cost.bytes_written == 0
    assert prefetch.cost.on_chip_bytes == TILE_BYTES


def test_padding_is_counted_within_the_hbm_bytes():
    totals = summary(lower_module(parse_module(MODULE)))
    assert totals["compute_bytes"] == 2 * TILE_BYTES
    assert totals["padding_bytes"] == 2 * (TILE_BYTES - LOGICAL)
    assert totals["on_chip_bytes"] == 3 * TILE_BYTES
