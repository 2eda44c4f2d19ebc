"""Blocked matmul in Pallas, written for the GPU (Triton) lowering.

Grid (M/bm, N/bn) over output tiles, both parallel. Each program sees the full-K row
panel of A and column panel of B (on the GPU a block is a pointer view, not a copy),
walks K in ``block_k`` slices with ``lax.fori_loop`` and carries the fp32 accumulator as
a loop value: the Triton lowering has no scratch memory, so ``matmul.py``'s VMEM
accumulator over a sequential k grid axis cannot lower there. K must be a multiple of
``block_k`` (a slice past the end of K would be clamped, not masked); ragged M and N are
edge blocks, handled by Pallas.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

DTYPES = {"bf16": jnp.bfloat16, "fp32": jnp.float32, "fp16": jnp.float16}


def _kernel(a_ref, b_ref, o_ref, *, k_steps, block_k):
    def step(kk, acc):
        ks = pl.ds(pl.multiple_of(kk * block_k, block_k), block_k)
        return acc + jnp.dot(a_ref[:, ks], b_ref[ks, :], preferred_element_type=jnp.float32)

    acc = jnp.zeros(o_ref.shape, jnp.float32)
    o_ref[...] = jax.lax.fori_loop(0, k_steps, step, acc).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_m", "block_n", "block_k", "num_warps", "num_stages", "interpret"))
def matmul(a, b, *, block_m=128, block_n=128, block_k=64, num_warps=4, num_stages=3, interpret=True):
    m, k = a.shape
    k_b, n = b.shape
    if k != k_b:
        raise ValueError(f"matmul: inner dimensions differ ({a.shape} @ {b.shape})")
    if k % block_k:
        raise ValueError(f"matmul: K={k} must be a multiple of block_k={block_k}")
    return pl.pallas_call(
        functools.partial(_kernel, k_steps=k // block_k, block_k=block_k),
        grid=(pl.cdiv(m, block_m), pl.cdiv(n, block_n)),
        in_specs=[
            pl.BlockSpec((block_m, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, block_n), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((block_m, block_n), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
        interpret=interpret,
        name="matmul_gpu",
    )(a, b)


def run(M=256, N=256, K=256, dtype="bf16", block_m=128, block_n=128, block_k=64, **_):
    """Random inputs of the gemm family's parameters; one call (interpret mode)."""
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((M, K)), dtype=DTYPES[dtype])
    b = jnp.asarray(rng.standard_normal((K, N)), dtype=DTYPES[dtype])
    return matmul(a, b, block_m=block_m, block_n=block_n, block_k=block_k)
