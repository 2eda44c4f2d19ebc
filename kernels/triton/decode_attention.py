"""Split-KV decode attention (flash-decoding) as two Triton kernels: one query token per
sequence, grouped-query heads, the attention family's GPU decode path (``seq_q=1``).

Split kernel: one program per (split, KV head, batch). It loads the query heads of its
KV group as the rows of one block (``BLOCK_M`` rows, at least 16 for ``tl.dot``; rows past
the group are padding), walks its part of the KV sequence in blocks of ``BLOCK_N`` keys
with the online softmax of ``attention.py`` (its ``_attend``), and writes its partial output and
log-sum-exp in fp32. The sequence is cut into ``split_kv`` parts of whole ``BLOCK_N``
blocks, as the attention family's ``kv_split`` cuts it.

Combine kernel: one program per (batch, query head), launched after every split has
finished. It reads that head's partial outputs and log-sum-exps of every split at once,
weights each by ``exp(lse - max)`` and writes the output and its log-sum-exp. With one
split the split kernel writes the output itself and there is no second launch.

This is the structure of vLLM's and SGLang's Triton decode kernels (grouped heads as
rows, 16-row blocks, a split stage then a reduce stage) and of FlashAttention's split-KV
decode, so ``measure_triton.py`` can time configs the simulator predicts one by one.

    run(batch=1, heads=32, kv_heads=4, seq_kv=4096, block_n=64, split_kv=8)  # -> (O, LSE)
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernels.triton.attention import _attend  # the online-softmax step over one key block

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
MIN_ROWS = 16
"""``tl.dot`` needs at least 16 rows: a KV group of fewer query heads is padded to 16."""


@triton.jit
def decode_split_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr, lse_ptr,
    stride_qb, stride_qh, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_os, stride_od,
    stride_lb, stride_lh, stride_ls,
    group, seq_kv, chunk, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """``out``: [batch, query heads, splits, head_dim] (fp32 partials, or the output itself
    with one split); ``lse``: [batch, query heads, splits] (natural log)."""
    part = tl.program_id(0)
    kv_head = tl.program_id(1)
    batch = tl.program_id(2)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m < group
    heads = kv_head * group + offs_m
    q = tl.load(q_ptr + batch * stride_qb + heads[:, None] * stride_qh + offs_d[None, :] * stride_qd,
                mask=rows_in[:, None], other=0.0)
    k_base = k_ptr + batch * stride_kb + kv_head * stride_kh
    v_base = v_ptr + batch * stride_vb + kv_head * stride_vh
    qk_scale = sm_scale * 1.4426950408889634  # log2(e)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    start = part * chunk  # a whole number of BLOCK_N blocks
    end = tl.minimum(start + chunk, seq_kv)
    first = start // BLOCK_N
    n_full = (end - start) // BLOCK_N
    for block in tl.range(first, first + n_full):  # every key in the split
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                block, offs_m, offs_d, end, 0, qk_scale, BLOCK_N, False, False)
    for block in tl.range(first + n_full, tl.cdiv(end, BLOCK_N)):  # the sequence's last keys, masked
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                block, offs_m, offs_d, end, 0, qk_scale, BLOCK_N, False, True)
    acc = acc / l_i[:, None]
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # ln(2): natural log
    out_at = out_ptr + batch * stride_ob + heads[:, None] * stride_oh + part * stride_os + offs_d[None, :] * stride_od
    tl.store(out_at, acc.to(out_ptr.dtype.element_ty), mask=rows_in[:, None])
    tl.store(lse_ptr + batch * stride_lb + heads * stride_lh + part * stride_ls, lse, mask=rows_in)


@triton.jit
def decode_combine_kernel(
    part_ptr, part_lse_ptr, out_ptr, lse_ptr,
    stride_pb, stride_ph, stride_ps, stride_pd,
    stride_qb, stride_qh, stride_qs,
    stride_ob, stride_oh, stride_od,
    stride_lb, stride_lh,
    heads, splits,
    HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr,
):
    """One (batch, query head): its rows of every split's partial, weighted by each split's
    share of the softmax's denominator."""
    pid = tl.program_id(0)
    batch = pid // heads
    head = pid % heads
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    parts_in = offs_s < splits
    lse = tl.load(part_lse_ptr + batch * stride_qb + head * stride_qh + offs_s * stride_qs, mask=parts_in,
                  other=float("-inf"))
    top = tl.max(lse, 0)
    weight = tl.where(parts_in, tl.exp(lse - top), 0.0)
    total = tl.sum(weight, 0)
    parts = tl.load(part_ptr + batch * stride_pb + head * stride_ph + offs_s[:, None] * stride_ps
                    + offs_d[None, :] * stride_pd, mask=parts_in[:, None], other=0.0)
    out = tl.sum(parts * weight[:, None], 0) / total
    tl.store(out_ptr + batch * stride_ob + head * stride_oh + offs_d * stride_od, out.to(out_ptr.dtype.element_ty))
    tl.store(lse_ptr + batch * stride_lb + head * stride_lh, top + tl.log(total))


def kv_split(seq_kv: int, split: int, block_n: int) -> tuple[int, int]:
    """(keys per split, a whole number of ``block_n`` blocks; splits that get keys): the
    attention family's cut (``accelsim.families.attention.kv_split``, not imported: the
    measurement scripts run without accelsim)."""
    chunk = math.ceil(math.ceil(seq_kv / split) / block_n) * block_n
    return chunk, math.ceil(seq_kv / chunk)


def block_rows(group: int) -> int:
    """Rows of a split program's query block: the group's query heads, padded to a power of
    two of at least :data:`MIN_ROWS`."""
    return max(MIN_ROWS, triton.next_power_of_2(group))


class DecodeCall:
    """One decode's inputs and buffers, made once; :meth:`launch` runs the split kernel and,
    with several splits, the combine kernel (what the attention family's decode trace
    holds: ``kernel_starts``)."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, block_n: int, split_kv: int,
                 num_stages: int, num_warps: int, block_m: int | None = None) -> None:
        batch, heads, head_dim = q.shape
        kv_heads, seq_kv = k.shape[1], k.shape[2]
        if heads % kv_heads:
            raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")
        if seq_kv < 1 or split_kv < 1 or block_n < 16 or block_n & (block_n - 1):
            raise ValueError(f"need seq_kv >= 1, split_kv >= 1 and block_n a power of two from 16, got "
                             f"{seq_kv}, {split_kv}, {block_n}")
        if head_dim < 16 or head_dim & (head_dim - 1):
            raise ValueError(f"head_dim must be a power of two from 16, got {head_dim}")
        self.group = heads // kv_heads
        self.block_m = block_m or block_rows(self.group)
        if self.block_m < self.group or self.block_m < MIN_ROWS or self.block_m & (self.block_m - 1):
            raise ValueError(f"block_m={self.block_m} must hold the {self.group} query heads of a KV group and be a "
                             f"power of two of at least {MIN_ROWS}")
        self.chunk, self.splits = kv_split(seq_kv, split_kv, block_n)
        if self.splits != split_kv:
            raise ValueError(f"split_kv={split_kv} leaves splits without keys ({seq_kv} keys in blocks of {block_n} "
                             f"give {self.splits} splits of {self.chunk})")
        self.q, self.k, self.v = q, k, v
        self.o = torch.empty_like(q)
        self.lse = torch.empty((batch, heads), dtype=torch.float32, device=q.device)
        if self.splits > 1:
            self.parts = torch.empty((batch, heads, self.splits, head_dim), dtype=torch.float32, device=q.device)
            self.part_lse = torch.empty((batch, heads, self.splits), dtype=torch.float32, device=q.device)
        else:  # the split kernel writes the output itself
            self.parts, self.part_lse = self.o[:, :, None, :], self.lse[:, :, None]
        self.grid = (self.splits, kv_heads, batch)
        self.scalars = (self.group, seq_kv, self.chunk, 1.0 / math.sqrt(head_dim))
        self.meta = {"HEAD_DIM": head_dim, "BLOCK_M": self.block_m, "BLOCK_N": block_n,
                     "num_stages": num_stages, "num_warps": num_warps}
        self.block_s = max(2, triton.next_power_of_2(self.splits))

    def launch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(O [batch, heads, head_dim] in the input type, LSE [batch, heads] in fp32)."""
        self.launch_split()
        if self.splits > 1:
            batch, heads = self.lse.shape
            decode_combine_kernel[(batch * heads,)](
                self.parts, self.part_lse, self.o, self.lse,
                *self.parts.stride(), *self.part_lse.stride(), *self.o.stride(), *self.lse.stride(),
                heads, self.splits, HEAD_DIM=self.q.shape[-1], BLOCK_S=self.block_s, num_warps=4,
            )
        return self.o, self.lse

    def launch_split(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The split kernel alone: (partial outputs, their log-sum-exps), or with one split
        (O, LSE)."""
        decode_split_kernel[self.grid](
            self.q, self.k, self.v, self.parts, self.part_lse,
            *self.q.stride(), *self.k.stride(), *self.v.stride(), *self.parts.stride(), *self.part_lse.stride(),
            *self.scalars, **self.meta,
        )
        return self.parts, self.part_lse


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, block_n: int, split_kv: int,
                     num_stages: int = 2, num_warps: int = 4, block_m: int | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """``q`` [batch, heads, head_dim] (one token); ``k``, ``v`` [batch, kv_heads, seq_kv, head_dim]."""
    return DecodeCall(q, k, v, block_n=block_n, split_kv=split_kv, num_stages=num_stages, num_warps=num_warps,
                      block_m=block_m).launch()


def inputs(batch: int, heads: int, kv_heads: int, seq_kv: int, head_dim: int, dtype: str,
           seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn((batch, heads, head_dim), generator=generator).to(DTYPES[dtype])
    k = torch.randn((batch, kv_heads, seq_kv, head_dim), generator=generator).to(DTYPES[dtype])
    v = torch.randn((batch, kv_heads, seq_kv, head_dim), generator=generator).to(DTYPES[dtype])
    return q, k, v


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """O and LSE in float64 (GQA by repeating K/V heads)."""
    group = q.shape[1] // k.shape[1]
    q64, k64, v64 = q.double(), k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    s = (q64[:, :, None, :] @ k64.transpose(-1, -2))[:, :, 0] / math.sqrt(q.shape[-1])
    lse = torch.logsumexp(s, dim=-1)
    return (torch.exp(s - lse[..., None])[:, :, None, :] @ v64)[:, :, 0], lse


def run(batch: int = 1, heads: int = 32, kv_heads: int = 8, seq_kv: int = 4096, head_dim: int = 128,
        dtype: str = "fp16", block_n: int = 64, split_kv: int = 8, num_stages: int = 2, num_warps: int = 4,
        block_m: int | None = None, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random Q, K, V (on the CPU: run under ``TRITON_INTERPRET=1``), one decode."""
    q, k, v = inputs(batch, heads, kv_heads, seq_kv, head_dim, dtype, seed)
    return decode_attention(q, k, v, block_n=block_n, split_kv=split_kv, num_stages=num_stages, num_warps=num_warps,
                            block_m=block_m)


def run_split(batch: int = 1, heads: int = 32, kv_heads: int = 8, seq_kv: int = 4096, head_dim: int = 128,
              dtype: str = "fp16", block_n: int = 64, split_kv: int = 8, num_stages: int = 2, num_warps: int = 4,
              block_m: int | None = None, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`run`'s split kernel alone (one launch: what ``accelsim capture triton`` and
    ``validation/precheck_triton.py`` compile)."""
    q, k, v = inputs(batch, heads, kv_heads, seq_kv, head_dim, dtype, seed)
    return DecodeCall(q, k, v, block_n=block_n, split_kv=split_kv, num_stages=num_stages, num_warps=num_warps,
                      block_m=block_m).launch_split()
