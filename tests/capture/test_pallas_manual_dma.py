"""Pallas capture of manual DMAs (``pltpu.make_async_copy`` from an operand left in HBM
with ``memory_space=pl.ANY``, double-buffered by hand): each grid step moves what its
own copies move, and the HBM operand gets no automatic block copies."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jax")

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.capture.pallas import capture_pallas  # noqa: E402
from accelsim.engine.chip import simulate_kernel  # noqa: E402
from tests.capture.pallas_totals import per_program, totals  # noqa: E402

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "pallas" / "tpu_ops.py"
M, N, ROWS = 1024, 512, 128
BLOCK = ROWS * N * 4


@pytest.fixture(scope="module")
def trace():
    return capture_pallas(str(KERNELS), "manual_dma_scale", {"M": str(M), "N": str(N), "rows": str(ROWS)})


def test_each_step_fetches_the_next_block_itself(trace):
    # step 0 fetches blocks 0 and 1, each later step the one after its own, the last none
    assert per_program(trace, "in0", "read") == [2 * BLOCK] + [BLOCK] * 6 + [0]
    _, moved = totals(trace)
    assert moved[("in0", "read")] == M * N * 4 and moved[("out0", "write")] == M * N * 4


def test_vmem_holds_the_two_slot_buffer_and_the_output_blocks(trace):
    assert trace.kernel.resources.local_memory_bytes == 2 * BLOCK + 2 * BLOCK


def test_it_simulates_as_an_hbm_bound_copy():
    big = capture_pallas(str(KERNELS), "manual_dma_scale", {"M": "8192", "N": "1024", "rows": "512"})
    sim = simulate_kernel(big, load_arch("tpu-v5e"))
    assert sim.bound == "hbm"
    assert sim.latency_s >= 2 * 8192 * 1024 * 4 / load_arch("tpu-v5e").hbm.bandwidth_bytes_per_s
