"""Several kernels in one trace (``kernel.kernel_starts``): programs of a later kernel
wait for every program of the earlier ones, each kernel pays the launch, a TPU pipeline
starts anew, and bad positions are refused."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.trace.kernel import KernelTrace


def compute_trace(programs: int, starts=None, flops: float = 1e9) -> KernelTrace:
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": "k", "grid": [programs], "kernel_starts": starts},
        "tensors": {"X": {"shape": [programs, 1024], "dtype": "bf16"}},
        "templates": [{"name": "t", "steps": [
            {"transfers": [{"tensor": "X", "block": ["p0"], "bytes": 2048}],
             "compute": [{"unit": "vector", "flops": flops, "dtype": "fp32"}]},
        ]}],
    })


def test_a_second_kernel_waits_for_the_first_on_a_gpu():
    chip = load_arch("h100-sxm")
    together = simulate_kernel(compute_trace(2), chip)
    apart = simulate_kernel(compute_trace(2, [1]), chip)
    body = together.latency_s - together.launch_overhead_s
    # two programs on two SMs overlap; as two kernels they run one after the other
    assert apart.latency_s - apart.launch_overhead_s == pytest.approx(2 * body, rel=0.02)
    assert apart.launch_overhead_s == 2 * chip.launch_overhead_s


def test_each_tpu_kernel_starts_its_pipeline_anew():
    chip = load_arch("tpu-v5e")
    one = simulate_kernel(compute_trace(8), chip)
    two = simulate_kernel(compute_trace(8, [4]), chip)
    # the second kernel's first copy and one HBM latency are exposed, and its launch paid
    assert two.latency_s - one.latency_s >= chip.hbm.latency_s + chip.launch_overhead_s


@pytest.mark.parametrize("starts", [[0], [3, 2], [8], [2, 2]])
def test_kernel_starts_must_be_increasing_positions_inside_the_grid(starts):
    with pytest.raises(ValueError, match="kernel_starts"):
        compute_trace(8, starts)
