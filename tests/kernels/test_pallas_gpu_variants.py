"""The GPU (Triton-lowering) variants of our Pallas matmul and attention agree with float64
NumPy references in interpret mode, and lower for ``cuda`` on this CPU-only machine (the
Pallas-to-Triton translation runs at lowering; compiling and running would need the GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from kernels.pallas import attention_gpu as attn  # noqa: E402
from kernels.pallas import matmul_gpu as mm  # noqa: E402

TRITON_CALL = "__gpu$xla.gpu.triton"


def _random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _lowered_for_cuda(fn, *args) -> str:
    return jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (200, 72, 96)])
def test_matmul(m, n, k):
    a, b = _random((m, k), 0), _random((k, n), 1)
    out = mm.matmul(jnp.asarray(a), jnp.asarray(b), block_m=64, block_n=64, block_k=32)
    np.testing.assert_allclose(np.asarray(out), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_matmul_refuses_a_k_that_is_not_a_multiple_of_block_k():
    a = jnp.zeros((64, 100), jnp.float32)
    with pytest.raises(ValueError, match="block_k"):
        mm.matmul(a, a.T, block_m=64, block_n=64, block_k=32)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_q, seq_kv, heads, kv_heads", [(128, 128, 2, 2), (64, 192, 4, 2)])
def test_attention(causal, seq_q, seq_kv, heads, kv_heads):
    q, k, v = attn.inputs(1, heads, kv_heads, seq_q, seq_kv, 64, "fp32")
    out, lse = attn.attention(q, k, v, causal=causal, block_q=32, block_k=64)
    np.testing.assert_allclose(np.asarray(out), attn.reference(q, k, v, causal), rtol=1e-4, atol=1e-4)
    # log-sum-exp of the scaled, masked scores, from float64
    q64, k64 = np.asarray(q, np.float64), np.repeat(np.asarray(k, np.float64), heads // kv_heads, axis=1)
    s = q64 @ k64.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(seq_kv)[None, :] <= np.arange(seq_q)[:, None] + seq_kv - seq_q, s, -np.inf)
    peak = s.max(axis=-1)
    np.testing.assert_allclose(np.asarray(lse), peak + np.log(np.exp(s - peak[..., None]).sum(axis=-1)), rtol=1e-5)


def test_attention_refuses_sequences_that_are_not_multiples_of_the_blocks():
    q, k, v = attn.inputs(1, 2, 2, 96, 96, 64, "fp32")
    with pytest.raises(ValueError, match="multiples"):
        attn.attention(q, k, v, block_q=64, block_k=64)


def test_matmul_lowers_to_one_triton_call_for_cuda():
    a = jnp.zeros((256, 192), jnp.bfloat16)
    text = _lowered_for_cuda(lambda x, y: mm.matmul(x, y, block_m=128, block_n=64, block_k=64, interpret=False),
                             a, a.T)
    assert text.count(TRITON_CALL) == 1


@pytest.mark.parametrize("causal", [False, True])
def test_attention_lowers_to_one_triton_call_for_cuda(causal):
    q, k, v = attn.inputs(1, 4, 2, 256, 512, 128, "bf16")
    text = _lowered_for_cuda(
        lambda *x: attn.attention(*x, causal=causal, block_q=128, block_k=64, interpret=False), q, k, v)
    assert text.count(TRITON_CALL) == 1
