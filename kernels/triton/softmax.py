"""Row softmax of an [rows, cols] tensor as a one-pass Triton kernel: each program
holds BLOCK_ROWS whole rows (padded to a power of two, masked) in registers, reads
them once and writes them once.

    run(rows=4096, cols=1024)  # -> Y, a torch tensor [rows, cols]
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton.row_layout import default_layout

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, rows, cols, stride_x, stride_y,
                   BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    offs_r = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    offs_c = tl.arange(0, BLOCK_COLS)
    inside = (offs_r[:, None] < rows) & (offs_c[None, :] < cols)
    x = tl.load(x_ptr + offs_r[:, None] * stride_x + offs_c[None, :], mask=inside, other=float("-inf"))
    x = x.to(tl.float32)
    shifted = x - tl.max(x, 1)[:, None]
    e = tl.exp(shifted)
    y = e / tl.sum(e, 1)[:, None]
    tl.store(y_ptr + offs_r[:, None] * stride_y + offs_c[None, :], y.to(y_ptr.dtype.element_ty), mask=inside)


def softmax(x: torch.Tensor, *, block_rows: int, num_warps: int) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(triton.cdiv(rows, block_rows),)](
        x, y, rows, cols, x.stride(0), y.stride(0),
        BLOCK_ROWS=block_rows, BLOCK_COLS=triton.next_power_of_2(cols), num_warps=num_warps,
    )
    return y


def run(rows: int, cols: int, dtype: str = "bf16", block_rows: int = 0, num_warps: int = 0,
        seed: int = 0) -> torch.Tensor:
    """Random X [rows, cols], one launch; ``block_rows`` and ``num_warps`` default to
    :func:`default_layout`."""
    default_rows, default_warps = default_layout(rows, cols)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn((rows, cols), generator=generator).to(DTYPES[dtype])
    return softmax(x, block_rows=block_rows or default_rows, num_warps=num_warps or default_warps)
