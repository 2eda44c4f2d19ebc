"""A fusion operand that a nested fusion only slices (one layer of stacked weights,
XLA:TPU's scan pattern) is read as the slice, not whole."""

import textwrap

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module

LAYERS, ROWS, COLS = 64, 128, 256


def lowered(inner_use: str):
    text = textwrap.dedent(f"""\
        HloModule m, is_scheduled=true, num_partitions=1
        %slice_layer (p0: f32[{LAYERS},{ROWS},{COLS}], p1: s32[]) -> f32[{ROWS},{COLS}] {{
          %p0 = f32[{LAYERS},{ROWS},{COLS}]{{2,1,0}} parameter(0)
          %p1 = s32[] parameter(1)
          %zero = s32[] constant(0)
          {inner_use}
        }}
        %outer (q0: f32[{LAYERS},{ROWS},{COLS}], q1: s32[], q2: f32[{ROWS},{COLS}]) -> f32[{ROWS},{COLS}] {{
          %q0 = f32[{LAYERS},{ROWS},{COLS}]{{2,1,0}} parameter(0)
          %q1 = s32[] parameter(1)
          %q2 = f32[{ROWS},{COLS}]{{1,0}} parameter(2)
          %layer = f32[{ROWS},{COLS}]{{1,0}} fusion(%q0, %q1), kind=kLoop, calls=%slice_layer
          ROOT %sum = f32[{ROWS},{COLS}]{{1,0}} add(%layer, %q2)
        }}
        ENTRY %main () -> f32[] {{
          %w = f32[{LAYERS},{ROWS},{COLS}]{{2,1,0}} parameter(0)
          %i = s32[] parameter(1)
          %x = f32[{ROWS},{COLS}]{{1,0}} parameter(2)
          ROOT %f = f32[{ROWS},{COLS}]{{1,0}} fusion(%w, %i, %x), kind=kLoop, calls=%outer
        }}
        """)
    return lower_module(parse_module(text)).ops[0].cost


LAYER_BYTES = ROWS * COLS * 4


def test_an_operand_sliced_inside_a_nested_fusion_reads_the_slice():
    cost = lowered(f"""%s = f32[1,{ROWS},{COLS}]{{2,1,0}} dynamic-slice(%p0, %p1, %zero, %zero), dynamic_slice_sizes={{1,{ROWS},{COLS}}}
          ROOT %r = f32[{ROWS},{COLS}]{{1,0}} bitcast(%s)""")
    assert cost.bytes_read == LAYER_BYTES + 4 + LAYER_BYTES  # one layer, the index, x


def test_an_operand_the_nested_fusion_reads_whole_is_read_whole():
    cost = lowered(f"""%n = f32[{LAYERS},{ROWS},{COLS}]{{2,1,0}} negate(%p0)
          %s = f32[1,{ROWS},{COLS}]{{2,1,0}} dynamic-slice(%n, %p1, %zero, %zero), dynamic_slice_sizes={{1,{ROWS},{COLS}}}
          ROOT %r = f32[{ROWS},{COLS}]{{1,0}} bitcast(%s)""")
    assert cost.bytes_read == LAYERS * LAYER_BYTES + 4 + LAYER_BYTES
