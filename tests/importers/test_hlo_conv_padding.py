"""Convolution flops count only the window positions that meet real input elements:
XLA:TPU writes some matmuls as convolutions that are mostly padding."""

import itertools
import textwrap

import pytest

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module


def conv_flops(lhs: str, rhs: str, out: str, window: str, labels: str) -> float:
    text = textwrap.dedent(f"""\
        HloModule m, num_partitions=1
        ENTRY %main () -> f32[] {{
          %x = bf16[{lhs}]{{{','.join(str(i) for i in reversed(range(lhs.count(',') + 1)))}}} parameter(0)
          %k = bf16[{rhs}]{{{','.join(str(i) for i in reversed(range(rhs.count(',') + 1)))}}} parameter(1)
          ROOT %c = bf16[{out}]{{{','.join(str(i) for i in reversed(range(out.count(',') + 1)))}}} convolution(%x, %k), window={{{window}}}, dim_labels={labels}
        }}
        """)
    return {op.name: op for op in lower_module(parse_module(text)).ops}["c"].cost.matrix_flops


def brute_force_pairs(in_size, out_size, size, stride, pad_low, lhs_dilate, rhs_dilate):
    last = (in_size - 1) * lhs_dilate
    return sum(1 for o, w in itertools.product(range(out_size), range(size))
               if 0 <= (p := o * stride + w * rhs_dilate - pad_low) <= last and p % lhs_dilate == 0)


def test_a_window_of_16_over_one_padded_position_is_one_product_per_output():
    """The pattern of MaxText's compiled backward: input length 1 padded 15 each side,
    window 16, 16 outputs: each output meets the input once."""
    flops = conv_flops("12,64,2,256,1", "16,128,2,256,1", "12,64,16,128,1",
                       "size=1x16x2 pad=0_0x15_15x0_0 rhs_reversal=0x1x0", "0b2f1_1o2i0->0b1f2")
    assert flops == 2 * (12 * 64 * 128) * 16 * 2 * 256


@pytest.mark.parametrize(("in_size", "size", "stride", "pad", "lhs_dilate", "rhs_dilate"),
                         [(10, 3, 1, (1, 1), 1, 1), (9, 4, 2, (2, 3), 1, 1), (7, 3, 1, (2, 2), 2, 1),
                          (12, 3, 3, (0, 0), 1, 2), (5, 5, 1, (-1, 2), 1, 1)])
def test_one_dimension_matches_a_brute_force_count(in_size, size, stride, pad, lhs_dilate, rhs_dilate):
    dilated = (in_size - 1) * lhs_dilate + 1 + pad[0] + pad[1]
    out_size = (dilated - ((size - 1) * rhs_dilate + 1)) // stride + 1
    window = (f"size={size} stride={stride} pad={pad[0]}_{pad[1]} lhs_dilate={lhs_dilate} "
              f"rhs_dilate={rhs_dilate}")
    flops = conv_flops(f"2,{in_size},8", f"{size},8,4", f"2,{out_size},4", window, "b0f_0io->b0f")
    assert flops == 2 * 2 * 4 * 8 * brute_force_pairs(in_size, out_size, size, stride, pad[0], lhs_dilate,
                                                       rhs_dilate)
