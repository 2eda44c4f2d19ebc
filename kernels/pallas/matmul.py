"""Blocked matmul in Pallas with k-accumulation in an fp32 VMEM scratch.

Grid (M/bm, N/bn, K/bk), k last and sequential ("arbitrary"); i and j "parallel".
The output block (i, j) stays resident across the k loop and is written back once.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(a_ref, b_ref, o_ref, acc_ref, *, k_size, block_k):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    a, b = a_ref[...], b_ref[...]
    if k_size % block_k:  # ragged K: the last block's padding must not reach the sum
        cols = kk * block_k + jax.lax.broadcasted_iota(jnp.int32, a.shape, 1)
        rows = kk * block_k + jax.lax.broadcasted_iota(jnp.int32, b.shape, 0)
        a = jnp.where(cols < k_size, a, 0)
        b = jnp.where(rows < k_size, b, 0)
    acc_ref[...] += jnp.dot(a, b, preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_m", "block_n", "block_k", "interpret"))
def matmul(a, b, *, block_m=128, block_n=128, block_k=128, interpret=True):
    m, k = a.shape
    _, n = b.shape
    grid = (pl.cdiv(m, block_m), pl.cdiv(n, block_n), pl.cdiv(k, block_k))
    return pl.pallas_call(
        functools.partial(_kernel, k_size=k, block_k=block_k),
        grid=grid,
        in_specs=[
            pl.BlockSpec((block_m, block_k), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((block_k, block_n), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((block_m, block_n), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_shapes=[pltpu.VMEM((block_m, block_n), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=interpret,
    )(a, b)


def run(M=256, N=256, K=256, dtype="bf16", block_m=128, block_n=128, block_k=128, **_):
    """Random inputs of the gemm family's parameters; one call."""
    rng = np.random.default_rng(0)
    jdtype = {"bf16": jnp.bfloat16, "fp32": jnp.float32, "fp16": jnp.float16}[dtype]
    a = jnp.asarray(rng.standard_normal((M, K)), dtype=jdtype)
    b = jnp.asarray(rng.standard_normal((K, N)), dtype=jdtype)
    return matmul(a, b, block_m=block_m, block_n=block_n, block_k=block_k)
