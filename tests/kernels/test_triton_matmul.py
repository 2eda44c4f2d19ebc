"""``kernels/triton/matmul.py`` computes A @ B, ragged edges and grouped order included."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from kernels.triton import matmul  # noqa: E402

TOLERANCE = {"fp32": 2e-2, "fp16": 2e-2}
"""fp32 inputs go through the dot at tf32-like precision on GPUs; the interpreter is
exact, the bound is loose enough for both."""


def reference(M, N, K, dtype):
    a, b = matmul.inputs(M, N, K, dtype)
    return a.float().numpy().astype(np.float64) @ b.float().numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (70, 50, 40)], ids=["even", "ragged"])
def test_matches_numpy(shape, dtype):
    M, N, K = shape
    c = matmul.run(M=M, N=N, K=K, dtype=dtype, block_m=32, block_n=32, block_k=16, group_m=2, num_stages=2,
                   num_warps=4)
    assert c.shape == (M, N)
    np.testing.assert_allclose(c.float().numpy(), reference(M, N, K, dtype), rtol=TOLERANCE[dtype],
                               atol=TOLERANCE[dtype] * np.sqrt(K))


def test_grouped_order_covers_every_tile_once():
    """5 x 3 tiles with group_m=2: the last group has a single row of tiles."""
    c = matmul.run(M=5 * 16, N=3 * 16, K=16, dtype="fp32", block_m=16, block_n=16, block_k=16, group_m=2)
    np.testing.assert_allclose(c.numpy(), reference(80, 48, 16, "fp32"), rtol=1e-4, atol=1e-4)
