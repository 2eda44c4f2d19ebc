"""Row-wise Pallas kernels: rmsnorm, layernorm and softmax over the last axis, and an
elementwise add. Each program handles ``block_rows`` full rows ([block_rows, cols]
blocks over a "parallel" grid of row blocks); statistics are computed in fp32."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

EPS = 1e-6
DTYPES = {"bf16": jnp.bfloat16, "fp32": jnp.float32, "fp16": jnp.float16}


def _rmsnorm_kernel(x_ref, w_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    rstd = jax.lax.rsqrt(jnp.mean(x * x, axis=1, keepdims=True) + EPS)
    o_ref[...] = (x * rstd * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def _layernorm_kernel(x_ref, w_ref, b_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    mean = jnp.mean(x, axis=1, keepdims=True)
    centred = x - mean
    rstd = jax.lax.rsqrt(jnp.mean(centred * centred, axis=1, keepdims=True) + EPS)
    y = centred * rstd * w_ref[...].astype(jnp.float32) + b_ref[...].astype(jnp.float32)
    o_ref[...] = y.astype(o_ref.dtype)


def _softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    e = jnp.exp(x - x.max(axis=1, keepdims=True))
    o_ref[...] = (e / e.sum(axis=1, keepdims=True)).astype(o_ref.dtype)


def _add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _row_call(kernel, x, *weights, block_rows, interpret):
    rows, cols = x.shape
    row_spec = pl.BlockSpec((block_rows, cols), lambda i: (i, 0))
    weight_spec = pl.BlockSpec((1, cols), lambda i: (0, 0))
    return pl.pallas_call(
        kernel,
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[row_spec] + [weight_spec] * len(weights),
        out_specs=row_spec,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(x, *weights)


@functools.partial(jax.jit, static_argnames=("block_rows", "interpret"))
def rmsnorm(x, w, *, block_rows=8, interpret=True):
    return _row_call(_rmsnorm_kernel, x, w.reshape(1, -1), block_rows=block_rows, interpret=interpret)


@functools.partial(jax.jit, static_argnames=("block_rows", "interpret"))
def layernorm(x, w, b, *, block_rows=8, interpret=True):
    return _row_call(_layernorm_kernel, x, w.reshape(1, -1), b.reshape(1, -1), block_rows=block_rows,
                     interpret=interpret)


@functools.partial(jax.jit, static_argnames=("block_rows", "interpret"))
def softmax(x, *, block_rows=8, interpret=True):
    return _row_call(_softmax_kernel, x, block_rows=block_rows, interpret=interpret)


@functools.partial(jax.jit, static_argnames=("block_rows", "interpret"))
def add(x, y, *, block_rows=8, interpret=True):
    rows, cols = x.shape
    spec = pl.BlockSpec((block_rows, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _add_kernel, grid=(pl.cdiv(rows, block_rows),), in_specs=[spec, spec], out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)), interpret=interpret,
    )(x, y)


def _inputs(rows, cols, dtype, count, seed=0):
    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.standard_normal(shape), DTYPES[dtype]) for shape in [(rows, cols)] + [(cols,)] * count]


def run_rmsnorm(rows=64, cols=256, dtype="bf16", block_rows=8, **_):
    x, w = _inputs(rows, cols, dtype, 1)
    return rmsnorm(x, w, block_rows=block_rows)


def run_layernorm(rows=64, cols=256, dtype="bf16", block_rows=8, **_):
    x, w, b = _inputs(rows, cols, dtype, 2)
    return layernorm(x, w, b, block_rows=block_rows)


def run_softmax(rows=64, cols=256, dtype="bf16", block_rows=8, **_):
    (x,) = _inputs(rows, cols, dtype, 0)
    return softmax(x, block_rows=block_rows)


def run_add(rows=64, cols=256, dtype="bf16", block_rows=8, **_):
    x, y = (jnp.asarray(np.random.default_rng(s).standard_normal((rows, cols)), DTYPES[dtype]) for s in (0, 1))
    return add(x, y, block_rows=block_rows)
