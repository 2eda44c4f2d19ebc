"""z = x + y over n elements as a Triton kernel: one program per BLOCK_SIZE elements,
the last one masked.

    run(n=1 << 20)  # -> z, a torch tensor [n]
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    y = tl.load(y_ptr + offs, mask=inside)
    tl.store(z_ptr + offs, x + y, mask=inside)


def add(x: torch.Tensor, y: torch.Tensor, *, block_size: int, num_warps: int) -> torch.Tensor:
    z = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, block_size),)](x, y, z, n, BLOCK_SIZE=block_size, num_warps=num_warps)
    return z


def run(n: int, dtype: str = "fp32", block_size: int = 1024, num_warps: int = 4, seed: int = 0) -> torch.Tensor:
    """Random x and y of n elements, one launch."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=generator).to(DTYPES[dtype])
    y = torch.randn(n, generator=generator).to(DTYPES[dtype])
    return add(x, y, block_size=block_size, num_warps=num_warps)
