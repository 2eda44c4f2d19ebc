"""``kernels/triton/vector_add.py`` adds two vectors, the last program masked."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels.triton import vector_add  # noqa: E402


@pytest.mark.parametrize("n", [1024, 1000])
def test_matches_numpy(n):
    z = vector_add.run(n=n, block_size=256)
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, generator=generator), torch.randn(n, generator=generator)
    np.testing.assert_allclose(z.numpy(), (x + y).numpy())
