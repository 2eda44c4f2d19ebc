"""Our Pallas kernels (interpret mode, on the CPU) agree with NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from kernels.pallas import attention as attn  # noqa: E402
from kernels.pallas import matmul as mm  # noqa: E402
from kernels.pallas import rowwise  # noqa: E402


def _random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (200, 72, 136)])
def test_matmul(m, n, k):
    a, b = _random((m, k), 0), _random((k, n), 1)
    out = mm.matmul(jnp.asarray(a), jnp.asarray(b), block_m=64, block_n=64, block_k=64)
    np.testing.assert_allclose(np.asarray(out), a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_q, seq_kv, heads, kv_heads", [(128, 128, 2, 2), (72, 200, 2, 1)])
def test_attention(causal, seq_q, seq_kv, heads, kv_heads):
    q, k, v = attn.inputs(1, heads, kv_heads, seq_q, seq_kv, 64, "fp32")
    out, lse = attn.attention(q, k, v, causal=causal, block_q=64, block_k=64)
    np.testing.assert_allclose(np.asarray(out), attn.reference(q, k, v, causal), rtol=1e-4, atol=1e-4)
    assert np.isfinite(np.asarray(lse)).all()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_q, seq_kv, heads, kv_heads, block_q", [(128, 128, 2, 2, 32), (64, 192, 4, 2, 32)])
def test_attention_backward(causal, seq_q, seq_kv, heads, kv_heads, block_q):
    q, k, v = attn.inputs(1, heads, kv_heads, seq_q, seq_kv, 64, "fp32")
    out, lse = attn.attention(q, k, v, causal=causal, block_q=64, block_k=64)
    do = jnp.asarray(_random(out.shape, 7))
    grads = attn.attention_bwd(q, k, v, out, lse, do, causal=causal, block_q=block_q, block_k=64)
    for got, want in zip(grads, attn.reference_grads(q, k, v, do, causal)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_attention_backward_needs_dividing_blocks():
    q, k, v = attn.inputs(1, 2, 2, 96, 96, 64, "fp32")
    out, lse = attn.attention(q, k, v, block_q=64, block_k=64)
    with pytest.raises(ValueError, match="divide"):
        attn.attention_bwd(q, k, v, out, lse, out, block_q=64, block_k=64)


def test_row_kernels():
    x, w, b = _random((20, 256), 0), _random(256, 1), _random(256, 2)
    X, W, B = map(jnp.asarray, (x, w, b))
    rms = x / np.sqrt((x * x).mean(1, keepdims=True) + rowwise.EPS) * w
    np.testing.assert_allclose(np.asarray(rowwise.rmsnorm(X, W)), rms, rtol=1e-5, atol=1e-5)
    c = x - x.mean(1, keepdims=True)
    ln = c / np.sqrt((c * c).mean(1, keepdims=True) + rowwise.EPS) * w + b
    np.testing.assert_allclose(np.asarray(rowwise.layernorm(X, W, B)), ln, rtol=1e-5, atol=1e-5)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(rowwise.softmax(X)), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(rowwise.add(X, X)), 2 * x)
