"""Runners for JAX's own Pallas TPU kernels (``jax.experimental.pallas.ops.tpu``, jax
0.10.2), for ``accelsim capture pallas`` and ``explore``: splash attention, ragged paged
attention and the megablox grouped matmul, which use scalar prefetch, dynamic grids and
manual DMAs; and a small kernel that double-buffers its input by hand.

Each function takes the problem and the block sizes as keyword arguments (``--param``),
builds its inputs deterministically and calls the kernel once; capture traces it
without running it (docs/capture-pallas.md).
"""

from __future__ import annotations

import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

DTYPES = {"bf16": jnp.bfloat16, "fp32": jnp.float32}
_splash = importlib.import_module("jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_kernel")
_splash_mask = importlib.import_module("jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_mask")
_ragged = importlib.import_module("jax.experimental.pallas.ops.tpu.ragged_paged_attention.kernel")
_gmm = importlib.import_module("jax.experimental.pallas.ops.tpu.megablox.gmm")


def _normal(shape, dtype, seed):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape), dtype=DTYPES[dtype])


def splash_attention(heads=8, seq=2048, head_dim=128, causal=True, block_q=512, block_kv=512,
                     block_kv_compute=None, dtype="bf16", **_):
    """Splash attention forward, one sequence of ``heads`` heads; its mask (causal or
    full) becomes the block lists the kernel prefetches."""
    one = _splash_mask.CausalMask((seq, seq)) if causal else _splash_mask.FullMask((seq, seq))
    mask = _splash_mask.MultiHeadMask([one] * heads)
    sizes = _splash.BlockSizes(block_q=block_q, block_kv=block_kv, block_kv_compute=block_kv_compute or block_kv)
    kernel = _splash.make_splash_mha_single_device(mask, block_sizes=sizes)
    q, k, v = (_normal((heads, seq, head_dim), dtype, seed) for seed in (0, 1, 2))
    return kernel(q, k, v)


def ragged_paged_attention(seqs=4, q_lens="1,1,128,512", kv_lens="1024,2048,512,1536", q_heads=8, kv_heads=2,
                           head_dim=128, page_size=16, pages_per_seq=128, num_kv_pages_per_block=8,
                           num_queries_per_block=64, dtype="bf16", **_):
    """Ragged paged attention over a batch mixing decode (1 query) and prefill sequences:
    ``q_lens`` and ``kv_lens`` per sequence (comma-separated); each sequence's pages are
    spread over the cache."""
    q_lens_list = [int(x) for x in str(q_lens).split(",")][:seqs]
    kv_lens_list = [int(x) for x in str(kv_lens).split(",")][:seqs]
    tokens = sum(q_lens_list)
    total_pages = seqs * pages_per_seq
    q = _normal((tokens, q_heads, head_dim), dtype, 0)
    kv_pages = _normal((total_pages, page_size, 2 * kv_heads, head_dim), dtype, 1)
    order = np.random.default_rng(2).permutation(total_pages).astype(np.int32)
    page_indices = jnp.asarray(order.reshape(seqs, pages_per_seq))
    cu_q_lens = jnp.asarray(np.concatenate([[0], np.cumsum(q_lens_list)]).astype(np.int32))
    return _ragged.ragged_paged_attention(
        q, kv_pages, jnp.asarray(kv_lens_list, jnp.int32), page_indices, cu_q_lens,
        jnp.asarray([seqs], jnp.int32), sm_scale=head_dim ** -0.5,
        num_kv_pages_per_block=num_kv_pages_per_block, num_queries_per_block=num_queries_per_block)


def grouped_matmul(m=2048, k=1024, n=1024, groups=8, skew=0, tm=128, tk=128, tn=128, dtype="bf16", **_):
    """Megablox grouped matmul (a mixture-of-experts layer's): ``m`` rows split among
    ``groups`` experts, group 0 taking ``skew`` rows more than the others."""
    lhs = _normal((m, k), dtype, 0)
    rhs = _normal((groups, k, n), dtype, 1)
    sizes = np.full(groups, m // groups, np.int32)
    sizes[0] += m - sizes.sum() + skew
    sizes[1:] -= skew // max(1, groups - 1)
    sizes[-1] += m - sizes.sum()
    return _gmm.gmm(lhs, rhs, jnp.asarray(sizes), tiling=(tm, tk, tn))


def _double_buffered_scale(x_hbm, o_ref, buffer, semaphores, *, rows):
    """``o = 2 x``, fetching each block of rows itself: the next block's copy starts
    before this one's compute, into the other half of a two-slot VMEM buffer."""
    i, steps = pl.program_id(0), pl.num_programs(0)
    slot = i % 2

    def copy(step, into):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(step * rows, rows)], buffer.at[into], semaphores.at[into])

    @pl.when(i == 0)
    def _():
        copy(0, 0).start()

    @pl.when(i + 1 < steps)
    def _():
        copy(i + 1, 1 - slot).start()

    copy(i, slot).wait()
    o_ref[...] = buffer[slot] * 2


def manual_dma_scale(M=4096, N=512, rows=256, dtype="fp32", **_):
    """A kernel whose input stays in HBM (``pl.ANY``) and moves by its own DMAs."""
    x = _normal((M, N), dtype, 0)
    return pl.pallas_call(
        functools.partial(_double_buffered_scale, rows=rows),
        grid=(M // rows,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((rows, N), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((2, rows, N), x.dtype), pltpu.SemaphoreType.DMA((2,))],
        out_shape=jax.ShapeDtypeStruct((M, N), x.dtype),
    )(x)
