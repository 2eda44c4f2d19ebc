"""Flash attention forward in Pallas (online softmax), with GQA and causal masking.

Grid (batch, heads, q blocks, kv blocks): the kv axis is last and sequential; the
running max ``m``, sum ``l`` and fp32 accumulator live in VMEM scratch across it. For
causal attention the K/V index map clamps to the last block a query block needs (so no
copy happens for skipped blocks) and ``pl.when`` skips their compute; the diagonal
block is masked elementwise.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

NEG_INF = -1e30


def _last_block(i, block_q, block_k, offset):
    """Index of the last K/V block a causal query block i attends."""
    return ((i + 1) * block_q - 1 + offset) // block_k


def _kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, m_ref, l_ref, acc_ref, *, scale, causal, block_q, block_k, offset, seq_kv):
    i, j = pl.program_id(2), pl.program_id(3)

    @pl.when(j == 0)
    def _init():
        m_ref[...] = jnp.full_like(m_ref, NEG_INF)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    ragged = seq_kv % block_k != 0

    def _step(masked: bool):
        q = q_ref[0, 0]
        v = v_ref[0, 0]
        s = jnp.dot(q, k_ref[0, 0].T, preferred_element_type=jnp.float32) * scale
        cols = j * block_k + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        if masked:
            rows = i * block_q + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0) + offset
            s = jnp.where(cols <= rows, s, NEG_INF)
        if ragged:  # keys past the end of the sequence (the edge block's padding)
            s = jnp.where(cols < seq_kv, s, NEG_INF)
            key_rows = j * block_k + jax.lax.broadcasted_iota(jnp.int32, v.shape, 0)
            v = jnp.where(key_rows < seq_kv, v, 0)
        m_prev = m_ref[...]
        m_new = jnp.maximum(m_prev, s.max(axis=1, keepdims=True))
        p = jnp.exp(s - m_new)
        alpha = jnp.exp(m_prev - m_new)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        m_ref[...] = m_new

    if causal:
        last = jnp.minimum(_last_block(i, block_q, block_k, offset), pl.num_programs(3) - 1)
        first_masked = (i * block_q + offset) // block_k  # the first block with keys beyond row 0's diagonal
        pl.when(j < first_masked)(lambda: _step(False))
        pl.when((j >= first_masked) & (j <= last))(lambda: _step(True))
        done = j == last
    else:
        _step(False)
        done = j == pl.num_programs(3) - 1

    @pl.when(done)
    def _store():
        o_ref[0, 0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)
        lse_ref[0, 0] = m_ref[...] + jnp.log(l_ref[...])


@functools.partial(jax.jit, static_argnames=("causal", "block_q", "block_k", "interpret"))
def attention(q, k, v, *, causal=False, block_q=128, block_k=128, interpret=True):
    """q: [batch, heads, seq_q, d]; k, v: [batch, kv_heads, seq_kv, d]. Returns the output
    and the log-sum-exp of each query row (what a backward pass needs)."""
    b, h, sq, d = q.shape
    _, hk, skv, _ = k.shape
    group = h // hk
    block_q, block_k = min(block_q, sq), min(block_k, skv)
    offset = skv - sq
    nq, nk = pl.cdiv(sq, block_q), pl.cdiv(skv, block_k)
    if causal:
        kv_index = lambda bb, hh, i, j: (bb, hh // group, jnp.minimum(j, _last_block(i, block_q, block_k, offset)), 0)
    else:
        kv_index = lambda bb, hh, i, j: (bb, hh // group, j, 0)
    kernel = functools.partial(_kernel, scale=1.0 / math.sqrt(d), causal=causal, block_q=block_q,
                               block_k=block_k, offset=offset, seq_kv=skv)
    return pl.pallas_call(
        kernel,
        grid=(b, h, nq, nk),
        in_specs=[
            pl.BlockSpec((1, 1, block_q, d), lambda bb, hh, i, j: (bb, hh, i, 0)),
            pl.BlockSpec((1, 1, block_k, d), kv_index),
            pl.BlockSpec((1, 1, block_k, d), kv_index),
        ],
        out_specs=[pl.BlockSpec((1, 1, block_q, d), lambda bb, hh, i, j: (bb, hh, i, 0)),
                   pl.BlockSpec((1, 1, block_q, 1), lambda bb, hh, i, j: (bb, hh, i, 0))],
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((b, h, sq, 1), jnp.float32)],
        scratch_shapes=[pltpu.VMEM((block_q, 1), jnp.float32), pltpu.VMEM((block_q, 1), jnp.float32),
                        pltpu.VMEM((block_q, d), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
        interpret=interpret,
    )(q, k, v)


def reference(q, k, v, causal=False):
    """NumPy attention in float64 (GQA by repeating K/V heads)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if causal:
        sq, skv = s.shape[-2:]
        mask = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
        s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def inputs(batch=1, heads=4, kv_heads=0, seq_q=256, seq_kv=0, head_dim=128, dtype="bf16", seed=0):
    kv_heads, seq_kv = kv_heads or heads, seq_kv or seq_q
    rng = np.random.default_rng(seed)
    jdtype = {"bf16": jnp.bfloat16, "fp32": jnp.float32, "fp16": jnp.float16}[dtype]
    q = jnp.asarray(rng.standard_normal((batch, heads, seq_q, head_dim)), jdtype)
    k = jnp.asarray(rng.standard_normal((batch, kv_heads, seq_kv, head_dim)), jdtype)
    v = jnp.asarray(rng.standard_normal((batch, kv_heads, seq_kv, head_dim)), jdtype)
    return q, k, v


def run(batch=1, heads=4, kv_heads=0, seq_q=256, seq_kv=0, head_dim=128, causal=False, dtype="bf16",
        block_m=128, block_n=128, **_):
    """The attention family's parameters (block_m/block_n are the q/kv block sizes); one call."""
    q, k, v = inputs(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype)
    return attention(q, k, v, causal=causal, block_q=block_m, block_k=block_n)[0]
