"""How the row-wise kernels (softmax, layernorm, rmsnorm) lay rows out over programs by
default, and the block of rows a normalisation program loads."""

from __future__ import annotations

import triton
import triton.language as tl

MIN_ELEMENTS_PER_PROGRAM = 1024
"""Rows per program: enough that a program holds at least this many elements."""


def default_layout(rows: int, cols: int) -> tuple[int, int]:
    """(block_rows, num_warps) as the row-wise families choose them on GPUs: rows per
    program so that a program holds at least 1024 elements, warps by the block's size
    (Liger-Kernel's rule)."""
    width = triton.next_power_of_2(cols)
    block_rows = min(max(1, MIN_ELEMENTS_PER_PROGRAM // width), triton.next_power_of_2(rows))
    elements = block_rows * width
    warps = 32 if elements >= 32768 else 16 if elements >= 8192 else 8 if elements >= 2048 else 4
    while warps > 1 and warps * 32 > elements:
        warps //= 2
    return block_rows, warps


@triton.jit
def load_rows(x_ptr, rows, cols, stride_x, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    """This program's ``[BLOCK_ROWS, BLOCK_COLS]`` block of rows in fp32 (0 outside the
    tensor), with its row and column offsets and masks."""
    offs_r = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    offs_c = tl.arange(0, BLOCK_COLS)
    rows_in = offs_r < rows
    cols_in = offs_c < cols
    inside = rows_in[:, None] & cols_in[None, :]
    x = tl.load(x_ptr + offs_r[:, None] * stride_x + offs_c[None, :], mask=inside, other=0.0).to(tl.float32)
    return x, offs_r, offs_c, rows_in, cols_in, inside
