"""Fused attention forward (FlashAttention-2 style) as a Triton kernel, with causal
masking (bottom-right aligned when seq_kv > seq_q) and grouped-query attention.

One program per (query block of BLOCK_M rows, batch x head). It loads its Q block once,
then walks the K/V blocks of BLOCK_N keys with an online softmax (base-2 exponentials,
the scale folded into one multiply), in two loops: first the blocks every query row
attends in full (no mask), then the partly masked ones (the causal diagonal, or the
short last block when seq_kv is not a multiple of BLOCK_N). It writes O and the
log-sum-exp of each row (fp32, natural log).

    run(heads=4, seq_q=256, head_dim=64, causal=True)  # -> (O, LSE)
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
            block, offs_m, offs_d, seq_kv, shift, qk_scale,
            BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, MASKED: tl.constexpr):
    offs_n = block * BLOCK_N + tl.arange(0, BLOCK_N)
    keys_in = offs_n < seq_kv
    k = tl.load(k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn, mask=keys_in[None, :], other=0.0)
    qk = tl.dot(q, k)
    if MASKED:
        attended = keys_in[None, :]
        if CAUSAL:
            attended = attended & (offs_m[:, None] + shift >= offs_n[None, :])
        qk = tl.where(attended, qk, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd, mask=keys_in[:, None], other=0.0)
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_new


@triton.jit
def attention_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    stride_lb, stride_lh,
    heads, group, seq_q, seq_kv, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    q_block = tl.program_id(0)
    batch_head = tl.program_id(1)
    batch = batch_head // heads
    head = batch_head % heads
    kv_head = head // group
    q_start = q_block * BLOCK_M
    offs_m = q_start + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < seq_q

    q_base = q_ptr + batch * stride_qb + head * stride_qh
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd, mask=rows_in[:, None], other=0.0)
    k_base = k_ptr + batch * stride_kb + kv_head * stride_kh
    v_base = v_ptr + batch * stride_vb + kv_head * stride_vh
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    # Key blocks [0, n_full) are attended by every row; [n_full, n_blocks) are partly masked.
    shift = seq_kv - seq_q
    n_blocks = tl.cdiv(seq_kv, BLOCK_N)
    if CAUSAL:
        last_row = tl.minimum(q_start + BLOCK_M, seq_q) - 1
        n_blocks = tl.minimum((last_row + shift) // BLOCK_N + 1, n_blocks)
        n_full = tl.minimum((q_start + shift + 1) // BLOCK_N, n_blocks)
    else:
        n_full = seq_kv // BLOCK_N
    for block in tl.range(0, n_full):
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                block, offs_m, offs_d, seq_kv, shift, qk_scale, BLOCK_N, CAUSAL, False)
    for block in tl.range(n_full, n_blocks):
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                block, offs_m, offs_d, seq_kv, shift, qk_scale, BLOCK_N, CAUSAL, True)

    acc = acc / l_i[:, None]
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # ln(2): back to natural log
    o_base = o_ptr + batch * stride_ob + head * stride_oh
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od, acc.to(o_ptr.dtype.element_ty),
             mask=rows_in[:, None])
    tl.store(lse_ptr + batch * stride_lb + head * stride_lh + offs_m, lse, mask=rows_in)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, block_m: int, block_n: int,
              num_stages: int, num_warps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``q`` [batch, heads, seq_q, head_dim]; ``k``, ``v`` [batch, kv_heads, seq_kv, head_dim]."""
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_kv = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    lse = torch.empty((batch, heads, seq_q), dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(seq_q, block_m), batch * heads)
    attention_fwd_kernel[grid](
        q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), lse.stride(0), lse.stride(1),
        heads, heads // kv_heads, seq_q, seq_kv, 1.0 / math.sqrt(head_dim),
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
        num_stages=num_stages, num_warps=num_warps,
    )
    return o, lse


def inputs(batch: int, heads: int, kv_heads: int, seq_q: int, seq_kv: int, head_dim: int, dtype: str,
           seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn((batch, heads, seq_q, head_dim), generator=generator).to(DTYPES[dtype])
    k = torch.randn((batch, kv_heads, seq_kv, head_dim), generator=generator).to(DTYPES[dtype])
    v = torch.randn((batch, kv_heads, seq_kv, head_dim), generator=generator).to(DTYPES[dtype])
    return q, k, v


def run(heads: int, seq_q: int, batch: int = 1, kv_heads: int = 0, seq_kv: int = 0, head_dim: int = 128,
        causal: bool = False, dtype: str = "bf16", block_m: int = 128, block_n: int = 64,
        num_stages: int | None = None, num_warps: int | None = None, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random Q, K, V, one launch. ``kv_heads`` and ``seq_kv`` default to ``heads`` and
    ``seq_q``; stages and warps default as in the attention family (3 and 4 for
    head_dim <= 64, else 2 and 8)."""
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"head_dim must be a power of two from 16 to 256, got {head_dim}")
    kv_heads = kv_heads or heads
    seq_kv = seq_kv or seq_q
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
    if causal and seq_kv < seq_q:
        raise ValueError("causal attention needs seq_kv >= seq_q")
    small = head_dim <= 64
    num_stages = num_stages or (3 if small else 2)
    num_warps = num_warps or (4 if small else 8)
    q, k, v = inputs(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, seed)
    return attention(q, k, v, causal=causal, block_m=block_m, block_n=block_n, num_stages=num_stages,
                     num_warps=num_warps)
