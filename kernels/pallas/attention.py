"""Flash attention in Pallas (online softmax), forward and backward, with GQA and causal
masking (bottom-right aligned when ``seq_kv > seq_q``).

Forward, grid (batch, heads, q blocks, kv blocks): the kv axis is last and sequential;
the running max ``m``, sum ``l`` and fp32 accumulator live in VMEM scratch across it. For
causal attention the K/V index map clamps to the last block a query block needs (so no
copy happens for skipped blocks) and ``pl.when`` skips their compute; the diagonal
block is masked elementwise.

Backward (:func:`attention_bwd`), two kernels as in FlashAttention-2 on TPU: ``dkv`` with
grid (batch, heads, kv blocks, q blocks), q last, recomputes ``P`` from Q, K and the
forward's log-sum-exp and accumulates dV += P^T dO and dK += dS^T Q in VMEM; ``dq`` with
grid (batch, heads, q blocks, kv blocks), kv last, recomputes ``P`` and ``dP`` and
accumulates dQ += dS K (seven matmuls per block pair in all, two of them recomputed).
``Delta = rowsum(dO * O)`` is an XLA fusion before them, and with GQA the per-head dK and
dV are summed over each KV group after them. Causal skipping clamps the index maps as
the forward does (dkv: to the first q block that attends the kv block; dq: to the last
kv block the q block attends). The backward needs block sizes that divide the sequences.
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


def _kv_walk(step, i, j, *, causal, block_q, block_k, offset):
    """Run ``step(masked)`` for kv block j of q block i (a sequential kv axis, 3): every
    block, or up to the diagonal with the blocks past row 0's diagonal masked. Returns
    whether j is the last block the q block needs."""
    if not causal:
        step(False)
        return j == pl.num_programs(3) - 1
    last = jnp.minimum(_last_block(i, block_q, block_k, offset), pl.num_programs(3) - 1)
    first_masked = (i * block_q + offset) // block_k  # the first block with keys beyond row 0's diagonal
    pl.when(j < first_masked)(lambda: step(False))
    pl.when((j >= first_masked) & (j <= last))(lambda: step(True))
    return j == last


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

    done = _kv_walk(_step, i, j, causal=causal, block_q=block_q, block_k=block_k, offset=offset)

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


def _first_q_block(j, block_q, block_k, offset):
    """Index of the first q block with a row that attends kv block j (causal)."""
    return jnp.maximum(j * block_k - offset, 0) // block_q


def _bwd_scores(q, k, lse, *, scale, masked, i, j, block_q, block_k, offset):
    """P recomputed from the forward's log-sum-exp, for one [block_q, block_k] block."""
    s = jnp.dot(q, k.T, preferred_element_type=jnp.float32) * scale
    if masked:
        rows = i * block_q + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0) + offset
        cols = j * block_k + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        s = jnp.where(cols <= rows, s, NEG_INF)
    return jnp.exp(s - lse)


def _dkv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref, dk_acc, dv_acc, *,
                scale, causal, block_q, block_k, offset):
    j, i = pl.program_id(2), pl.program_id(3)

    @pl.when(i == 0)
    def _init():
        dk_acc[...] = jnp.zeros_like(dk_acc)
        dv_acc[...] = jnp.zeros_like(dv_acc)

    def _step(masked: bool):
        q, k, v, do = q_ref[0, 0], k_ref[0, 0], v_ref[0, 0], do_ref[0, 0]
        p = _bwd_scores(q, k, lse_ref[0, 0], scale=scale, masked=masked, i=i, j=j, block_q=block_q,
                        block_k=block_k, offset=offset)
        dv_acc[...] += jnp.dot(p.astype(do.dtype).T, do, preferred_element_type=jnp.float32)
        dp = jnp.dot(do, v.T, preferred_element_type=jnp.float32)
        ds = p * (dp - delta_ref[0, 0]) * scale
        dk_acc[...] += jnp.dot(ds.astype(q.dtype).T, q, preferred_element_type=jnp.float32)

    if causal:
        first = _first_q_block(j, block_q, block_k, offset)
        # unmasked once the q block's first row attends the kv block's last key
        unmasked = (j + 1) * block_k - 1 <= i * block_q + offset
        pl.when((i >= first) & unmasked)(lambda: _step(False))
        pl.when((i >= first) & ~unmasked)(lambda: _step(True))
    else:
        _step(False)

    @pl.when(i == pl.num_programs(3) - 1)
    def _store():
        dk_ref[0, 0] = dk_acc[...].astype(dk_ref.dtype)
        dv_ref[0, 0] = dv_acc[...].astype(dv_ref.dtype)


def _dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref, dq_acc, *,
               scale, causal, block_q, block_k, offset):
    i, j = pl.program_id(2), pl.program_id(3)

    @pl.when(j == 0)
    def _init():
        dq_acc[...] = jnp.zeros_like(dq_acc)

    def _step(masked: bool):
        q, k, v, do = q_ref[0, 0], k_ref[0, 0], v_ref[0, 0], do_ref[0, 0]
        p = _bwd_scores(q, k, lse_ref[0, 0], scale=scale, masked=masked, i=i, j=j, block_q=block_q,
                        block_k=block_k, offset=offset)
        dp = jnp.dot(do, v.T, preferred_element_type=jnp.float32)
        ds = p * (dp - delta_ref[0, 0]) * scale
        dq_acc[...] += jnp.dot(ds.astype(k.dtype), k, preferred_element_type=jnp.float32)

    done = _kv_walk(_step, i, j, causal=causal, block_q=block_q, block_k=block_k, offset=offset)

    @pl.when(done)
    def _store():
        dq_ref[0, 0] = dq_acc[...].astype(dq_ref.dtype)


@functools.partial(jax.jit, static_argnames=("causal", "block_q", "block_k", "interpret"))
def attention_bwd(q, k, v, o, lse, do, *, causal=False, block_q=128, block_k=128, interpret=True):
    """Gradients (dq, dk, dv) of :func:`attention` given its output ``o``, log-sum-exp
    ``lse`` and the output gradient ``do``; same layouts as the forward."""
    b, h, sq, d = q.shape
    _, hk, skv, _ = k.shape
    group = h // hk
    block_q, block_k = min(block_q, sq), min(block_k, skv)
    if sq % block_q or skv % block_k:
        raise ValueError(f"the backward needs blocks that divide the sequences: {sq}/{block_q}, {skv}/{block_k}")
    offset = skv - sq
    nq, nk = sq // block_q, skv // block_k
    scale = 1.0 / math.sqrt(d)
    delta = jnp.sum(o.astype(jnp.float32) * do.astype(jnp.float32), axis=-1, keepdims=True)
    params = pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel", "arbitrary"))
    common = {"scale": scale, "causal": causal, "block_q": block_q, "block_k": block_k, "offset": offset}

    # dkv: grid (b, h, kv block j, q block i)
    if causal:
        q_of = lambda bb, hh, j, i: (bb, hh, jnp.maximum(i, _first_q_block(j, block_q, block_k, offset)), 0)
    else:
        q_of = lambda bb, hh, j, i: (bb, hh, i, 0)
    kv_of = lambda bb, hh, j, i: (bb, hh // group, j, 0)
    row_specs = [pl.BlockSpec((1, 1, block_q, d), q_of), pl.BlockSpec((1, 1, block_k, d), kv_of),
                 pl.BlockSpec((1, 1, block_k, d), kv_of), pl.BlockSpec((1, 1, block_q, d), q_of),
                 pl.BlockSpec((1, 1, block_q, 1), q_of), pl.BlockSpec((1, 1, block_q, 1), q_of)]
    out_of = lambda bb, hh, j, i: (bb, hh, j, 0)
    dk, dv = pl.pallas_call(
        functools.partial(_dkv_kernel, **common),
        grid=(b, h, nk, nq),
        in_specs=row_specs,
        out_specs=[pl.BlockSpec((1, 1, block_k, d), out_of), pl.BlockSpec((1, 1, block_k, d), out_of)],
        out_shape=[jax.ShapeDtypeStruct((b, h, skv, d), k.dtype), jax.ShapeDtypeStruct((b, h, skv, d), v.dtype)],
        scratch_shapes=[pltpu.VMEM((block_k, d), jnp.float32), pltpu.VMEM((block_k, d), jnp.float32)],
        compiler_params=params,
        interpret=interpret,
    )(q, k, v, do, lse, delta)

    # dq: grid (b, h, q block i, kv block j)
    if causal:
        kv_index = lambda bb, hh, i, j: (bb, hh // group, jnp.minimum(j, _last_block(i, block_q, block_k, offset)), 0)
    else:
        kv_index = lambda bb, hh, i, j: (bb, hh // group, j, 0)
    row_of = lambda bb, hh, i, j: (bb, hh, i, 0)
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, **common),
        grid=(b, h, nq, nk),
        in_specs=[pl.BlockSpec((1, 1, block_q, d), row_of), pl.BlockSpec((1, 1, block_k, d), kv_index),
                  pl.BlockSpec((1, 1, block_k, d), kv_index), pl.BlockSpec((1, 1, block_q, d), row_of),
                  pl.BlockSpec((1, 1, block_q, 1), row_of), pl.BlockSpec((1, 1, block_q, 1), row_of)],
        out_specs=pl.BlockSpec((1, 1, block_q, d), row_of),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        scratch_shapes=[pltpu.VMEM((block_q, d), jnp.float32)],
        compiler_params=params,
        interpret=interpret,
    )(q, k, v, do, lse, delta)
    if group > 1:  # per query head -> per KV head
        dk = dk.astype(jnp.float32).reshape(b, hk, group, skv, d).sum(axis=2).astype(k.dtype)
        dv = dv.astype(jnp.float32).reshape(b, hk, group, skv, d).sum(axis=2).astype(v.dtype)
    return dq, dk, dv


def reference_grads(q, k, v, do, causal=False):
    """NumPy float64 gradients of attention's output with respect to q, k and v."""
    q, k, v, do = (np.asarray(x, dtype=np.float64) for x in (q, k, v, do))
    hk = k.shape[1]
    group = q.shape[1] // hk
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ kr.transpose(0, 1, 3, 2) * scale
    if causal:
        sq, skv = s.shape[-2:]
        s = np.where(np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vr.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * scale
    dq, dk = ds @ kr, ds.transpose(0, 1, 3, 2) @ q
    fold = lambda x: x.reshape(x.shape[0], hk, group, *x.shape[2:]).sum(axis=2)
    return dq, fold(dk), fold(dv)


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


def run_bwd(batch=1, heads=4, kv_heads=0, seq_q=256, seq_kv=0, head_dim=128, causal=False, dtype="bf16",
            block_m=128, block_n=128, **_):
    """The attention family's parameters with ``pass=bwd``: one backward (the forward runs
    first for its output and log-sum-exp). Capture with ``--launch 1`` (dkv) or ``--launch
    2`` (dq); launch 0 is the forward."""
    q, k, v = inputs(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype)
    o, lse = attention(q, k, v, causal=causal, block_q=block_m, block_k=block_n)
    do = jnp.asarray(np.random.default_rng(1).standard_normal(o.shape), o.dtype)
    return attention_bwd(q, k, v, o, lse, do, causal=causal, block_q=block_m, block_k=block_n)
