"""Flash attention forward in Pallas (online softmax), written for the GPU (Triton) lowering.

Grid (batch, heads, q blocks), all parallel. Each program holds one query block and the
full K/V of its (batch, kv head) as pointer views, and walks the KV blocks with
``lax.fori_loop``, carrying the running max, sum and fp32 accumulator as loop values
(the Triton lowering has no scratch memory, so ``attention.py``'s VMEM state over a
sequential kv grid axis cannot lower there). Causal attention is aligned bottom-right
(query row r sees keys up to r + seq_kv - seq_q): a first loop covers the KV blocks
entirely below the diagonal unmasked, a second the blocks that cross it, masked, and the
blocks above it are never visited. GQA maps query head h to K/V head h // (heads / kv_heads).
Sequence lengths must be multiples of their block sizes.

``accelsim capture`` counts the non-causal loop (a ``scan``: static trip count) and the
causal loops (``while`` loops whose bounds it evaluates from ``program_id`` at every grid
point) exactly.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from kernels.pallas.attention import inputs, reference

__all__ = ["attention", "inputs", "reference", "run"]

NEG_INF = -1e30


def _kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, *, scale, causal, block_q, block_k, offset, kv_steps):
    i = pl.program_id(2)
    q = q_ref[...]

    def step(j, carry, masked):
        acc, m_prev, l_prev = carry
        ks = pl.ds(pl.multiple_of(j * block_k, block_k), block_k)
        s = jnp.dot(q, k_ref[ks, :].T, preferred_element_type=jnp.float32) * scale
        if masked:
            rows = i * block_q + offset + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
            cols = j * block_k + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
            s = jnp.where(cols <= rows, s, NEG_INF)
        m_new = jnp.maximum(m_prev, s.max(axis=1))
        p = jnp.exp(s - m_new[:, None])
        alpha = jnp.exp(m_prev - m_new)
        v = v_ref[ks, :]
        acc = alpha[:, None] * acc + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        return acc, m_new, alpha * l_prev + p.sum(axis=1)

    carry = (jnp.zeros(o_ref.shape, jnp.float32), jnp.full((block_q,), NEG_INF, jnp.float32),
             jnp.zeros((block_q,), jnp.float32))
    if causal:
        # blocks whose last key is at or before the block's first row's diagonal need no mask
        unmasked = jax.lax.div(i * block_q + offset + 1, block_k)
        # the last block holding a key the block's last row sees, plus one
        end = jax.lax.div((i + 1) * block_q + offset + block_k - 1, block_k)
        carry = jax.lax.fori_loop(0, unmasked, functools.partial(step, masked=False), carry)
        carry = jax.lax.fori_loop(unmasked, end, functools.partial(step, masked=True), carry)
    else:
        carry = jax.lax.fori_loop(0, kv_steps, functools.partial(step, masked=False), carry)
    acc, m, l = carry
    o_ref[...] = (acc / l[:, None]).astype(o_ref.dtype)
    lse_ref[...] = m + jnp.log(l)


@functools.partial(jax.jit, static_argnames=("causal", "block_q", "block_k", "num_warps", "num_stages", "interpret"))
def attention(q, k, v, *, causal=False, block_q=128, block_k=64, num_warps=4, num_stages=2, interpret=True):
    """q: [batch, heads, seq_q, d]; k, v: [batch, kv_heads, seq_kv, d]. Returns the output
    and the log-sum-exp of each query row, [batch, heads, seq_q] in fp32."""
    b, h, sq, d = q.shape
    _, hk, skv, _ = k.shape
    block_q, block_k = min(block_q, sq), min(block_k, skv)
    if h % hk:
        raise ValueError(f"attention: heads={h} must be a multiple of kv_heads={hk}")
    if sq % block_q or skv % block_k:
        raise ValueError(f"attention: seq_q={sq} and seq_kv={skv} must be multiples of block_q={block_q} "
                         f"and block_k={block_k}")
    if causal and sq > skv:
        raise ValueError(f"attention: causal needs seq_q={sq} <= seq_kv={skv} (rows before the first key see nothing)")
    group = h // hk
    kernel = functools.partial(_kernel, scale=1.0 / math.sqrt(d), causal=causal, block_q=block_q, block_k=block_k,
                               offset=skv - sq, kv_steps=skv // block_k)
    q_spec = pl.BlockSpec((None, None, block_q, d), lambda bb, hh, i: (bb, hh, i, 0))
    kv_spec = pl.BlockSpec((None, None, skv, d), lambda bb, hh, i: (bb, hh // group, 0, 0))
    return pl.pallas_call(
        kernel,
        grid=(b, h, sq // block_q),
        in_specs=[q_spec, kv_spec, kv_spec],
        out_specs=[q_spec, pl.BlockSpec((None, None, block_q), lambda bb, hh, i: (bb, hh, i))],
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((b, h, sq), jnp.float32)],
        compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
        interpret=interpret,
        name="attention_gpu",
    )(q, k, v)


def run(batch=1, heads=4, kv_heads=0, seq_q=256, seq_kv=0, head_dim=128, causal=False, dtype="bf16",
        block_m=128, block_n=64, **_):
    """The attention family's parameters (block_m/block_n are the q/kv block sizes); one call."""
    q, k, v = inputs(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype)
    return attention(q, k, v, causal=causal, block_q=block_m, block_k=block_n)[0]
