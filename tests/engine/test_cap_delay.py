"""The power limiter's delay (``power.dvfs.boost.cap_delay``, ``docs/power.md``, "The limiter's
delay"): a kernel launched from idle (``power.dvfs.boost.from_idle``) whose power passes the cap
keeps the boost clock for the delay and runs the rest of its work at the capped clock; one that ends
within the delay is not throttled at all; kernels run back to back (the default) are throttled
throughout, as before."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.search import split_params

FROM_IDLE = ["power.dvfs.boost.from_idle=true"]


def _gemm(size: int, overrides: list[str]):
    chip = load_arch("h100-sxm", overrides)
    family = get_family("gemm")
    problem, config, _ = split_params(family, {"M": str(size), "N": str(size), "K": str(size), "dtype": "bf16"})
    return simulate_kernel(family.build(problem, family.resolve_config(problem, config, chip), chip), chip)


@pytest.fixture(scope="module")
def long_gemm():
    """A bf16 GEMM over the 700 W cap that lasts well past the 5 ms delay, back to back and from idle."""
    return _gemm(16384, []), _gemm(16384, FROM_IDLE)


def test_back_to_back_kernels_run_at_the_capped_clock_throughout(long_gemm):
    sustained, _ = long_gemm
    assert sustained.throttled_clock_hz is not None
    assert sustained.full_clock_latency_s < sustained.latency_s


def test_from_idle_the_first_delay_runs_at_the_full_clock(long_gemm):
    """Its first 5 ms do that share of the full-clock run's work; the rest takes the capped time."""
    sustained, from_idle = long_gemm
    delay_s = load_arch("h100-sxm", FROM_IDLE).power.cap_delay_s
    share = delay_s / sustained.full_clock_latency_s
    assert from_idle.throttled_clock_hz == sustained.throttled_clock_hz
    assert from_idle.latency_s == pytest.approx(delay_s + (1 - share) * sustained.latency_s)
    assert sustained.full_clock_latency_s < from_idle.latency_s < sustained.latency_s


def test_its_energy_is_the_two_runs_in_the_same_shares(long_gemm):
    sustained, from_idle = long_gemm
    assert sustained.energy.joules < from_idle.energy.joules  # the boost's first 5 ms cost more per flop
    assert from_idle.energy.average_power_w > sustained.energy.average_power_w


def test_a_kernel_over_the_cap_that_ends_within_the_delay_keeps_the_full_clock():
    sustained = _gemm(8192, [])
    from_idle = _gemm(8192, FROM_IDLE)
    assert sustained.throttled_clock_hz is not None and sustained.full_clock_latency_s < 5e-3
    assert from_idle.throttled_clock_hz is None
    assert from_idle.latency_s == pytest.approx(sustained.full_clock_latency_s)
    assert from_idle.energy.average_power_w > 700.0
