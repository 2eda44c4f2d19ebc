"""A power cap below a kernel's power lowers the clock by the DVFS rule (``docs/power.md``):
dynamic power C V^2 f with V tracking f down to a floor (Guerreiro et al., "Modeling and
Decoupling the GPU Power Consumption for Cross-Domain DVFS", IEEE TPDS 30(11), 2019), so an
operation in the clock's domain costs (f / f0)^(k - 1) of its energy at the chip's clock f0; the
kernel runs at the highest clock step whose power fits under the cap."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import engine_for, simulate_kernel
from accelsim.engine.energy import CLOCK_PARTS, at_clock, clock_steps, kernel_activity, kernel_energy
from accelsim.engine.shortcuts import Shortcuts
from accelsim.families import get_family
from accelsim.families.search import split_params

CAP_W = 500.0
OFF = ["power.dvfs.boost.enabled=false"]  # the boost is on by default; these test a cap at the fixed clock


def _gemm(chip):
    family = get_family("gemm")
    problem, config, _ = split_params(family, {"M": "4096", "N": "4096", "K": "4096"})
    return family.build(problem, family.resolve_config(problem, config, chip), chip)


@pytest.fixture(scope="module")
def runs():
    """The GEMM at the chip's clock with no cap, and under a 500 W cap."""
    free = load_arch("h100-sxm", OFF)
    capped = load_arch("h100-sxm", OFF + [f'power.cap="{CAP_W:g} W"'])
    trace = _gemm(free)
    return free, trace, simulate_kernel(trace, free), simulate_kernel(trace, capped)


def _rule_clock(chip, full) -> float:
    """The clock the rule gives a compute-bound kernel, from its run at the chip's clock alone:
    its body takes f0 / f as long, its clock-domain energy (f / f0)^(k - 1) as much, HBM's and the
    launch's the same; the highest step whose average power fits."""
    power = chip.power
    parts = full.energy.joules_by_part
    clock_j = sum(parts[name] for name in CLOCK_PARTS)
    body_s = full.latency_s - full.launch_overhead_s
    for clock in clock_steps(chip):
        latency = full.launch_overhead_s + body_s * chip.clock_hz / clock
        volts = max(clock, power.floor_clock_hz) / chip.clock_hz
        watts = (clock_j * volts ** (power.dvfs_exponent - 1) + parts["hbm"]) / latency + power.static_w
        if watts <= CAP_W:
            return clock
    raise AssertionError("no clock step fits")


def test_the_kernel_passes_the_cap_at_full_clock(runs):
    _, _, full, _ = runs
    assert full.energy.average_power_w > CAP_W
    assert full.throttled_clock_hz is None and full.power_cap_w is None


def test_a_gemm_under_the_cap_runs_at_the_clock_the_rule_gives(runs):
    chip, _, full, capped = runs
    expected = _rule_clock(chip, full)
    assert abs(capped.throttled_clock_hz - expected) <= chip.power.clock_step_hz
    assert capped.throttled_clock_hz < chip.clock_hz


def test_it_slows_down_as_its_clock(runs):
    """Compute-bound: the body takes f0 / f as long (overheads given in seconds stay)."""
    chip, _, full, capped = runs
    body_full = full.latency_s - full.launch_overhead_s
    body_capped = capped.latency_s - capped.launch_overhead_s
    assert body_capped / body_full == pytest.approx(chip.clock_hz / capped.throttled_clock_hz, rel=0.02)
    assert capped.full_clock_latency_s == full.latency_s


def test_the_clock_is_the_highest_step_that_fits(runs):
    chip, trace, _, capped = runs
    assert capped.energy.average_power_w <= CAP_W
    faster = at_clock(chip, capped.throttled_clock_hz + chip.power.clock_step_hz)
    run = engine_for(faster).simulate(trace, faster, timeline=False, replays=None, hits=None, costs=None,
                                      shortcuts=Shortcuts())
    energy = kernel_energy(chip.power, kernel_activity(trace, faster, run), run.latency_s, faster.clock_hz,
                           chip.clock_hz)
    assert energy.average_power_w > CAP_W


def test_hbm_energy_does_not_follow_the_clock(runs):
    _, _, full, capped = runs
    assert capped.energy.joules_by_part["hbm"] == pytest.approx(full.energy.joules_by_part["hbm"])
    assert capped.energy.joules_by_part["matrix_unit"] < full.energy.joules_by_part["matrix_unit"]


def test_a_cap_above_the_kernels_power_changes_nothing(runs):
    chip, trace, full, _ = runs
    high = simulate_kernel(trace, load_arch("h100-sxm", OFF + ['power.cap="900 W"']))
    assert high.latency_s == full.latency_s and high.throttled_clock_hz is None
    assert high.power_cap_w == 900.0 and high.energy.joules == full.energy.joules

