"""``kernels/triton/attention.py`` computes softmax(Q K^T / sqrt(d)) V and the row
log-sum-exp, causal or not, with grouped-query heads and ragged sequence lengths, and the
gradients of Q, K and V (the backward kernel)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from kernels.triton import attention  # noqa: E402


def reference(batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, dtype):
    q, k, v = (t.float().numpy().astype(np.float64)
               for t in attention.inputs(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype))
    group = heads // kv_heads
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    if causal:
        rows = np.arange(seq_q)[:, None] + (seq_kv - seq_q)
        scores = np.where(rows >= np.arange(seq_kv)[None, :], scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(axis=-1, keepdims=True)
    return (weights / total) @ v, (top + np.log(total))[..., 0]


CASES = {
    "plain": dict(batch=1, heads=2, kv_heads=2, seq_q=64, seq_kv=64, head_dim=64, causal=False),
    "causal": dict(batch=1, heads=2, kv_heads=2, seq_q=64, seq_kv=64, head_dim=64, causal=True),
    "ragged_causal_gqa": dict(batch=2, heads=4, kv_heads=2, seq_q=40, seq_kv=56, head_dim=32, causal=True),
    "ragged": dict(batch=1, heads=1, kv_heads=1, seq_q=40, seq_kv=50, head_dim=16, causal=False),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_matches_numpy(case):
    p = CASES[case]
    o, lse = attention.run(**p, dtype="fp16", block_m=16, block_n=16)
    expected_o, expected_lse = reference(**p, dtype="fp16")
    np.testing.assert_allclose(o.float().numpy(), expected_o, atol=2e-2)
    np.testing.assert_allclose(lse.numpy(), expected_lse, atol=1e-3)


@pytest.mark.parametrize("case", ["plain", "causal", "ragged_causal_gqa"])
def test_backward_matches_autograd(case):
    torch = pytest.importorskip("torch")
    p = CASES[case]
    q, k, v = attention.inputs(p["batch"], p["heads"], p["kv_heads"], p["seq_q"], p["seq_kv"], p["head_dim"], "fp32")
    o, lse = attention.reference_forward(q, k, v, p["causal"])
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(1))
    grads = attention.attention_bwd(q, k, v, o, lse, do, causal=p["causal"], block_m=16, block_n=16, num_stages=2,
                                    num_warps=4)
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    group = p["heads"] // p["kv_heads"]
    scores = leaves[0] @ leaves[1].repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(p["head_dim"])
    if p["causal"]:
        visible = torch.arange(p["seq_kv"])[None, :] <= torch.arange(p["seq_q"])[:, None] + (p["seq_kv"] - p["seq_q"])
        scores = scores.masked_fill(~visible, float("-inf"))
    (scores.softmax(-1) @ leaves[2].repeat_interleave(group, 1)).backward(do.double())
    for got, leaf in zip(grads, leaves):
        want = leaf.grad.numpy()
        np.testing.assert_allclose(got.double().numpy(), want, atol=1e-5 * np.abs(want).max())


def test_rejects_odd_head_dim():
    with pytest.raises(ValueError, match="head_dim"):
        attention.run(heads=1, seq_q=16, head_dim=48)
