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


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
def test_each_kernel_reports_its_time(arch):
    """A trace of several kernels reports each one's time (launch left out), adding up to
    the latency less the launches; one kernel reports none."""
    chip = load_arch(arch)
    light, heavy = 4, 12  # programs of the first and second kernel, the second's 3x the work
    trace = KernelTrace.model_validate({
        **compute_trace(light + heavy, [light]).model_dump(),
        "program_vars": {"w": [1] * light + [3] * heavy},
        "templates": [{"name": "t", "steps": [{"repeat": "w", "transfers": [
            {"tensor": "X", "block": ["p0"], "bytes": 2048}],
            "compute": [{"unit": "vector", "flops": 1e9, "dtype": "fp32"}]}]}],
    })
    sim = simulate_kernel(trace, chip)
    assert sim.kernels == 2 and len(sim.per_kernel_s) == 2
    assert sum(sim.per_kernel_s) == pytest.approx(sim.latency_s - sim.launch_overhead_s, rel=1e-9)
    assert sim.per_kernel_s[1] > 2 * sim.per_kernel_s[0]
    assert sim.summary()["per_kernel_s"] == sim.per_kernel_s
    assert simulate_kernel(compute_trace(8), chip).per_kernel_s is None


def test_a_memo_hit_reports_the_same_kernel_times():
    chip = load_arch("h100-sxm")
    memo = {}
    first = simulate_kernel(compute_trace(4, [2]), chip, replays=memo)
    again = simulate_kernel(compute_trace(4, [2]), chip, replays=memo)
    assert len(memo) == 1 and again.per_kernel_s == first.per_kernel_s


def test_a_tpu_kernel_waits_for_the_one_before_on_every_core():
    """On a megacore chip a trace's second kernel ran on one TensorCore while the first still
    ran on the other (their grids split over the cores): two kernels took one's time."""
    chip = load_arch("tpu-v5p")
    trace = compute_trace(16, [8]).model_dump()
    trace["kernel"]["dimension_semantics"] = ["parallel"]
    apart = simulate_kernel(KernelTrace.model_validate(trace), chip)
    trace["kernel"]["kernel_starts"] = None
    together = simulate_kernel(KernelTrace.model_validate(trace), chip)
    assert len(apart.per_kernel_s) == 2 and min(apart.per_kernel_s) > 0
    assert apart.latency_s - apart.launch_overhead_s > 1.5 * (together.latency_s - together.launch_overhead_s)
