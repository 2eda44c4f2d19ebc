"""Programs that only do matrix flops run at the chip's matrix peak, padded to the MMA granule."""

from __future__ import annotations

import math

import pytest

from accelsim.engine.chip import simulate_kernel


def matmul(flops: float, shape: list[int] | None = None, dtype: str = "bf16") -> dict:
    compute = {"unit": "matrix", "flops": flops, "dtype": dtype}
    if shape is not None:
        compute["shape"] = shape
    return {"compute": [compute]}


@pytest.mark.parametrize("per_core", [1, 2, 16, 40])
def test_latency_is_flops_over_peak_when_programs_fill_the_cores(exactly, ideal_chip, kernel_trace, per_core):
    chip = ideal_chip("h100-sxm")
    programs = per_core * chip.num_cores  # 40 per core is more than fit at once: several waves
    flops = 2.0 * 128 * 256 * 64
    sim = simulate_kernel(kernel_trace([programs], [matmul(flops)]), chip)
    assert sim.flops == programs * flops
    assert sim.latency_s == exactly(programs * flops / chip.matrix_flops_per_s("bf16"))
    assert sim.bound == "matrix_unit"


def test_matrix_efficiency_scales_the_peak(exactly, ideal_chip, kernel_trace):
    full, derated = ideal_chip("h100-sxm"), ideal_chip("h100-sxm", "matrix_unit.efficiency=0.5")
    trace = kernel_trace([full.num_cores], [matmul(2.0 * 128 * 256 * 64)])
    assert simulate_kernel(trace, derated).latency_s == exactly(2 * simulate_kernel(trace, full).latency_s)


def padding_ratio(shape, granule) -> float:
    padded = [math.ceil(size / g) * g for size, g in zip(shape, granule)]
    return math.prod(padded) / math.prod(shape)


def test_gpu_odd_shape_is_slowed_by_its_padding_to_the_mma_granule(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm")
    shape = [100, 100, 100]  # MMA granule [64, 8, 16] pads it to [128, 104, 112]
    flops = 2.0 * math.prod(shape)
    programs = chip.num_cores
    unpadded_s = flops / (chip.matrix_flops_per_s("bf16") / chip.num_cores)  # one program per core
    sim = simulate_kernel(kernel_trace([programs], [matmul(flops, shape)]), chip)
    assert padding_ratio(shape, chip.matrix.shape) == pytest.approx(128 * 104 * 112 / 100**3)
    assert sim.latency_s == exactly(unpadded_s * padding_ratio(shape, chip.matrix.shape))
    assert sim.flops == programs * flops  # padding costs time, not useful flops


def test_gpu_aligned_shape_costs_no_padding(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm")
    shape = [128, 256, 64]
    flops = 2.0 * math.prod(shape)
    bare = simulate_kernel(kernel_trace([chip.num_cores], [matmul(flops)]), chip)
    shaped = simulate_kernel(kernel_trace([chip.num_cores], [matmul(flops, shape)]), chip)
    assert shaped.latency_s == exactly(bare.latency_s)


def test_tpu_pads_rows_to_sublanes_and_columns_to_the_mxu(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("tpu-v5e")
    shape = [100, 200, 300]  # granule [8 sublanes, 128, 128] pads it to [104, 256, 384]
    flops = 2.0 * math.prod(shape)
    steps = 8
    sim = simulate_kernel(kernel_trace([steps], [matmul(flops, shape)]), chip)
    rate = chip.matrix_flops_per_s("bf16")  # one TensorCore
    assert sim.latency_s == exactly(steps * 2.0 * 104 * 256 * 384 / rate)
    assert sim.flops == steps * flops
