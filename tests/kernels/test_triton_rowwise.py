"""``kernels/triton/softmax.py``, ``layernorm.py`` and ``rmsnorm.py`` match NumPy, masked columns (not a
power of two) and a masked last program included."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels.triton import layernorm, rmsnorm, softmax  # noqa: E402


@pytest.mark.parametrize("shape", [(16, 64), (13, 100)], ids=["even", "ragged"])
@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")  # rows past the end: -inf - -inf, never stored
def test_softmax_matches_numpy(shape):
    rows, cols = shape
    y = softmax.run(rows=rows, cols=cols, dtype="fp32", block_rows=4)
    x = torch.randn((rows, cols), generator=torch.Generator().manual_seed(0)).numpy().astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(16, 64), (13, 100)], ids=["even", "ragged"])
def test_layernorm_matches_numpy(shape):
    rows, cols = shape
    y, mean, rstd = layernorm.run(rows=rows, cols=cols, dtype="fp32", block_rows=4, eps=1e-5)
    x, w, b = (t.numpy().astype(np.float64) for t in layernorm.inputs(rows, cols, "fp32"))
    expected_mean = x.mean(axis=1)
    expected_rstd = 1 / np.sqrt(x.var(axis=1) + 1e-5)
    expected = (x - expected_mean[:, None]) * expected_rstd[:, None] * w + b
    np.testing.assert_allclose(mean.numpy(), expected_mean, atol=1e-5)
    np.testing.assert_allclose(rstd.numpy(), expected_rstd, rtol=1e-4)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(16, 64), (13, 100)], ids=["even", "ragged"])
def test_rmsnorm_matches_numpy(shape):
    rows, cols = shape
    y, rstd = rmsnorm.run(rows=rows, cols=cols, dtype="fp32", block_rows=4, eps=1e-6)
    x, w = (t.numpy().astype(np.float64) for t in rmsnorm.inputs(rows, cols, "fp32"))
    expected_rstd = 1 / np.sqrt((x * x).mean(axis=1) + 1e-6)
    np.testing.assert_allclose(rstd.numpy(), expected_rstd, rtol=1e-4)
    np.testing.assert_allclose(y.numpy(), x * expected_rstd[:, None] * w, rtol=1e-4, atol=1e-4)


def test_default_layout_follows_the_rowwise_families():
    """At least 1024 elements per program; 4 warps up to 2047 elements, 8 from 2048."""
    assert softmax.default_layout(4096, 1024) == (1, 4)
    assert softmax.default_layout(4096, 100) == (8, 4)
    assert softmax.default_layout(4096, 4096) == (1, 8)
    assert softmax.default_layout(3, 64) == (4, 4)
