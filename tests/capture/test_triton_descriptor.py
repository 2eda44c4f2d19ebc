"""Tensor descriptors (``tl.make_tensor_descriptor``, Triton's replacement for block
pointers) are captured like plain pointer arithmetic: exact bytes at ragged edges."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.engine.programs import program_costs  # noqa: E402
from accelsim.arch.model import load_arch  # noqa: E402

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "triton" / "add_2d_descriptor.py"


def test_descriptor_kernel_is_correct():
    from kernels.triton.add_2d_descriptor import run

    z = run(rows=100, cols=72, block_r=64, block_c=64, seed=3)
    generator = torch.Generator().manual_seed(3)
    x, y = torch.randn(100, 72, generator=generator), torch.randn(100, 72, generator=generator)
    assert torch.equal(z, x + y)


def test_descriptor_loads_and_stores_count_in_bounds_bytes():
    trace = capture_triton(str(KERNEL), "run", {"rows": "100", "cols": "72"})
    costs = program_costs(trace, load_arch("h100-sxm"))
    assert trace.num_programs == 4
    assert costs.read_bytes.sum() == 2 * 100 * 72 * 4
    assert costs.write_bytes.sum() == 100 * 72 * 4
    # four tiles: full, ragged rows, ragged columns, both
    assert sorted(costs.write_bytes.tolist()) == sorted([64 * 64 * 4, 36 * 64 * 4, 64 * 8 * 4, 36 * 8 * 4])
