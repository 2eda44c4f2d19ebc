"""How the row-wise kernels (softmax, layernorm) lay rows out over programs by default."""

from __future__ import annotations

import triton

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
