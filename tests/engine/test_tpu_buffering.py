"""A TPU grid step's copies overlap the previous step's compute with two or more buffers
(Pallas' default double buffering); with one (``pipeline_depth: 1``, ``pl.Buffered(1)``)
they wait for it, so copy and compute add up."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import simulate_kernel

FLOPS = 2.0 * 512 * 512 * 512
STEP = [{"transfers": [{"tensor": "X", "block": ["p0"], "bytes": 1 << 20}],
         "compute": [{"unit": "matrix", "flops": FLOPS, "dtype": "bf16"}]}]


def test_single_buffering_adds_copy_and_compute(ideal_chip, kernel_trace):
    chip = ideal_chip("tpu-v5e")
    times = {depth: simulate_kernel(kernel_trace([64], STEP, pipeline_depth=depth, launch_order="last_axis_fastest"),
                                    chip).latency_s for depth in (1, 2, 3)}
    compute_s = FLOPS / chip.matrix_flops_per_s("bf16")
    copy_s = (1 << 20) / min(chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz, chip.hbm.bandwidth_bytes_per_s)
    assert times[2] == times[3]  # a third buffer hides nothing more here
    assert times[1] - times[2] == pytest.approx(63 * min(compute_s, copy_s), rel=1e-6)
