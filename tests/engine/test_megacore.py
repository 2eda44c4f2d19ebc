"""TPU megacore: a grid's first ``parallel`` axis is split over the chip's two TensorCores;
``arbitrary`` axes, and single-core chips, run the whole grid on one core."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel, tpu_core_assignment

FLOPS = 2.0 * 512 * 512 * 512
MATMUL = [{"compute": [{"unit": "matrix", "flops": FLOPS, "dtype": "bf16"}]}]
STREAM = [{"transfers": [{"tensor": "X", "block": ["p0", "p1"], "bytes": 1 << 20}]}]


def grid_kernel(kernel_trace, semantics, steps=MATMUL, grid=(4, 8)):
    return kernel_trace(grid, steps, launch_order="last_axis_fastest", dimension_semantics=semantics)


def test_parallel_axis_halves_compute_time_on_v5p(kernel_trace):
    chip = load_arch("tpu-v5p")
    split = simulate_kernel(grid_kernel(kernel_trace, ["parallel", "arbitrary"]), chip)
    whole = simulate_kernel(grid_kernel(kernel_trace, ["arbitrary", "arbitrary"]), chip)
    assert tpu_core_assignment(grid_kernel(kernel_trace, ["parallel", "arbitrary"]), chip)[1] == 2
    assert split.latency_s / whole.latency_s == pytest.approx(0.5, abs=0.05)
    assert split.flops == whole.flops


def test_parallel_split_is_exactly_half_on_an_ideal_v5p(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("tpu-v5p")
    split = simulate_kernel(grid_kernel(kernel_trace, ["parallel", "arbitrary"]), chip)
    one_core_s = 32 * FLOPS / (chip.matrix.flops_per_cycle_per_core["bf16"] * chip.clock_hz)
    assert split.latency_s == exactly(one_core_s / 2)
    assert split.latency_s == exactly(32 * FLOPS / chip.matrix_flops_per_s("bf16"))  # the chip's peak


def test_an_odd_parallel_axis_splits_unevenly(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("tpu-v5p")
    trace = grid_kernel(kernel_trace, ["parallel", "arbitrary"], grid=(3, 8))
    cores, count = tpu_core_assignment(trace, chip)
    assert count == 2
    assert sorted(int((cores == c).sum()) for c in (0, 1)) == [8, 16]
    step_s = FLOPS / (chip.matrix.flops_per_cycle_per_core["bf16"] * chip.clock_hz)
    assert simulate_kernel(trace, chip).latency_s == exactly(16 * step_s)


def test_the_split_follows_the_first_parallel_axis(kernel_trace):
    chip = load_arch("tpu-v5p")
    trace = grid_kernel(kernel_trace, ["arbitrary", "parallel"])
    cores, count = tpu_core_assignment(trace, chip)
    p1 = [i % 8 for i in range(32)]  # last axis fastest
    assert count == 2
    assert cores.tolist() == [0 if j < 4 else 1 for j in p1]


def test_v5e_has_one_core_whatever_the_semantics(kernel_trace):
    chip = load_arch("tpu-v5e")
    split = simulate_kernel(grid_kernel(kernel_trace, ["parallel", "arbitrary"]), chip)
    whole = simulate_kernel(grid_kernel(kernel_trace, ["arbitrary", "arbitrary"]), chip)
    assert tpu_core_assignment(grid_kernel(kernel_trace, ["parallel", "parallel"]), chip)[1] == 1
    assert split.latency_s == whole.latency_s


def test_megacore_shares_one_hbm(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("tpu-v5p")
    split = simulate_kernel(grid_kernel(kernel_trace, ["parallel", "arbitrary"], STREAM), chip)
    whole = simulate_kernel(grid_kernel(kernel_trace, ["arbitrary", "arbitrary"], STREAM), chip)
    # One TensorCore's DMAs can already use all of HBM: two cores stream no faster.
    assert split.latency_s == exactly(32 * (1 << 20) / chip.hbm.bandwidth_bytes_per_s)
    assert whole.latency_s == pytest.approx(split.latency_s, rel=0.05)
