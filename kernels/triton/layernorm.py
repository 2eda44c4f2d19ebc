"""Layer norm over each row of an [rows, cols] tensor, with weight and bias, as a
one-pass Triton kernel (the shape of Liger-Kernel's forward): each program holds
BLOCK_ROWS whole rows (padded to a power of two, masked), writes the normalised rows
and each row's mean and reciprocal standard deviation (fp32).

    run(rows=4096, cols=1024)  # -> (Y, mean, rstd)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton.row_layout import default_layout, load_rows

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, rows, cols, stride_x, stride_y, eps,
                     BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    x, offs_r, offs_c, rows_in, cols_in, inside = load_rows(x_ptr, rows, cols, stride_x, BLOCK_ROWS, BLOCK_COLS)
    w = tl.load(w_ptr + offs_c, mask=cols_in, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs_c, mask=cols_in, other=0.0).to(tl.float32)
    mean = tl.sum(x, 1) / cols
    centred = tl.where(inside, x - mean[:, None], 0.0)
    var = tl.sum(centred * centred, 1) / cols
    rstd = tl.math.rsqrt(var + eps)
    y = centred * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs_r[:, None] * stride_y + offs_c[None, :], y.to(y_ptr.dtype.element_ty), mask=inside)
    tl.store(mean_ptr + offs_r, mean, mask=rows_in)
    tl.store(rstd_ptr + offs_r, rstd, mask=rows_in)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, *, eps: float, block_rows: int,
              num_warps: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    layernorm_kernel[(triton.cdiv(rows, block_rows),)](
        x, w, b, y, mean, rstd, rows, cols, x.stride(0), y.stride(0), eps,
        BLOCK_ROWS=block_rows, BLOCK_COLS=triton.next_power_of_2(cols), num_warps=num_warps,
    )
    return y, mean, rstd


def inputs(rows: int, cols: int, dtype: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn((rows, cols), generator=generator).to(DTYPES[dtype])
    w = torch.randn(cols, generator=generator).to(DTYPES[dtype])
    b = torch.randn(cols, generator=generator).to(DTYPES[dtype])
    return x, w, b


def run(rows: int, cols: int, dtype: str = "bf16", block_rows: int = 0, num_warps: int = 0, eps: float = 1e-5,
        seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random X [rows, cols], weight and bias [cols], one launch; ``block_rows`` and
    ``num_warps`` default to :func:`default_layout`."""
    default_rows, default_warps = default_layout(rows, cols)
    x, w, b = inputs(rows, cols, dtype, seed)
    return layernorm(x, w, b, eps=float(eps), block_rows=block_rows or default_rows,
                     num_warps=num_warps or default_warps)
