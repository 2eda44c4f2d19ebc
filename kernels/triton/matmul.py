"""C = A @ B as a tiled Triton kernel: one program per [BLOCK_M, BLOCK_N] output tile,
launched in grouped ("super-grouping") order so that GROUP_M consecutive programs
share their B tiles in L2, a loop over K in steps of BLOCK_K, and masks on every edge
(ragged M, N and K).

Addresses are computed from the loop index on every iteration (no pointer carried
from one iteration to the next), which is also what lets ``accelsim capture``
compress the K loop.

    run(M=512, N=512, K=512, dtype="bf16")  # -> C, a torch tensor [M, N]
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}
OUTPUT_DTYPES = {torch.float8_e4m3fn: torch.bfloat16}
"""fp8 (e4m3) inputs give a bf16 C, as fp8 GEMMs in inference do."""


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_in = offs_m < M
    cols_in = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = k * BLOCK_K + tl.arange(0, BLOCK_K)
        depth_in = offs_k < K
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=rows_in[:, None] & depth_in[None, :], other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=depth_in[:, None] & cols_in[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=rows_in[:, None] & cols_in[None, :])


def matmul(a: torch.Tensor, b: torch.Tensor, *, block_m: int, block_n: int, block_k: int, group_m: int,
           num_stages: int, num_warps: int) -> torch.Tensor:
    (M, K), (_, N) = a.shape, b.shape
    c = torch.empty((M, N), dtype=OUTPUT_DTYPES.get(a.dtype, a.dtype), device=a.device)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    matmul_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
        num_stages=num_stages, num_warps=num_warps,
    )
    return c


def inputs(M: int, N: int, K: int, dtype: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn((M, K), generator=generator).to(DTYPES[dtype])
    b = torch.randn((K, N), generator=generator).to(DTYPES[dtype])
    return a, b


def run(M: int, N: int, K: int, dtype: str = "bf16", block_m: int = 128, block_n: int = 256, block_k: int = 64,
        group_m: int = 8, num_stages: int = 4, num_warps: int = 8, seed: int = 0) -> torch.Tensor:
    """Random A [M, K] and B [K, N], one launch; the defaults are the gemm family's GPU
    config for 16-bit inputs."""
    a, b = inputs(M, N, K, dtype, seed)
    return matmul(a, b, block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m,
                  num_stages=num_stages, num_warps=num_warps)


def run_bt(M: int, N: int, K: int, dtype: str = "bf16", block_m: int = 128, block_n: int = 256, block_k: int = 64,
           group_m: int = 8, num_stages: int = 4, num_warps: int = 8, seed: int = 0) -> torch.Tensor:
    """:func:`run` with B the transpose of a row-major [N, K] weight (K contiguous, as
    ``nn.Linear`` hands ``x @ W.T`` to the kernel): ``measure_triton.py``'s ``matmul-bt``."""
    a, b = inputs(M, N, K, dtype, seed)
    return matmul(a, b.t().contiguous().t(), block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m,
                  num_stages=num_stages, num_warps=num_warps)
