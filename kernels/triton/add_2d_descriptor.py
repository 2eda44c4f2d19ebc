"""z = x + y over [rows, cols] through tensor descriptors (``tl.make_tensor_descriptor``,
Triton's replacement for block pointers): one program per [BLOCK_R, BLOCK_C] tile;
descriptor loads and stores bounds-check the ragged edge tiles themselves.

    run(rows=1000, cols=520)  # -> z, a torch tensor [rows, cols]
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def add_2d_kernel(x_ptr, y_ptr, z_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BLOCK_R, BLOCK_C])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BLOCK_R, BLOCK_C])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BLOCK_R, BLOCK_C])
    r = tl.program_id(0) * BLOCK_R
    c = tl.program_id(1) * BLOCK_C
    z_desc.store([r, c], x_desc.load([r, c]) + y_desc.load([r, c]))


def run(rows: int = 256, cols: int = 256, dtype: str = "fp32", block_r: int = 64, block_c: int = 64,
        num_warps: int = 4, seed: int = 0) -> torch.Tensor:
    """Random x and y of [rows, cols] (cols x element size a multiple of 16 bytes), one launch."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator).to(DTYPES[dtype])
    y = torch.randn(rows, cols, generator=generator).to(DTYPES[dtype])
    z = torch.empty_like(x)
    grid = (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))
    add_2d_kernel[grid](x, y, z, rows, cols, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=num_warps)
    return z
