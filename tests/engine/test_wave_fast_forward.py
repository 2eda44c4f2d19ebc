"""Identical whole waves of a GPU kernel are added at once instead of replayed: the
results are those of replaying every wave, whatever breaks a run of identical waves (a
tail, a kernel boundary, programs that differ, a contended pool)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import Shortcuts, simulate_kernel
from accelsim.engine.fluid import FluidResources


def replayed_and_forwarded(monkeypatch, trace, chip):
    """The kernel simulated with every wave replayed, then with the fast-forward, and how
    many times the fast-forward booked skipped waves."""
    slow = simulate_kernel(trace, chip, shortcuts=Shortcuts(fast_forward_waves=False))
    booked = []
    real_book = FluidResources.book

    def spy(pool, used, events):
        booked.append(events)
        real_book(pool, used, events)

    monkeypatch.setattr(FluidResources, "book", spy)
    fast = simulate_kernel(trace, chip)
    return slow, fast, booked


def assert_same(slow, fast):
    assert fast.latency_s == slow.latency_s  # whole picoseconds per wave: exact
    assert fast.events == slow.events
    assert fast.utilization == pytest.approx(slow.utilization, rel=1e-12, abs=1e-15)
    assert fast.bound == slow.bound


def streaming_steps(flops: float = 4096.0) -> list[dict]:
    return [{"transfers": [{"tensor": "X", "block": ["p0"], "bytes": 65536}],
             "compute": [{"unit": "vector", "flops": flops, "dtype": "fp32"}]}]


@pytest.mark.parametrize("warps", [4, 32], ids=["many per SM", "two per SM"])
@pytest.mark.parametrize("tail", [0, 7])
def test_identical_waves_match_the_full_replay(monkeypatch, kernel_trace, warps, tail):
    chip = load_arch("h100-sxm")
    per_core = 64 // warps
    programs = 20 * chip.num_cores * per_core + tail
    trace = kernel_trace([programs], streaming_steps(), resources={"warps": warps})
    slow, fast, booked = replayed_and_forwarded(monkeypatch, trace, chip)
    assert_same(slow, fast)
    assert booked and sum(booked) > 10  # the waves were skipped, not replayed


def test_a_kernel_boundary_inside_a_run_of_waves_is_kept(monkeypatch, kernel_trace):
    chip = load_arch("h100-sxm")
    wave = chip.num_cores * 2
    trace = kernel_trace([12 * wave], streaming_steps(), resources={"warps": 32},
                         kernel_starts=[5 * wave + 3, 9 * wave])
    slow, fast, booked = replayed_and_forwarded(monkeypatch, trace, chip)
    assert_same(slow, fast)
    assert booked


def test_programs_that_differ_end_a_run(monkeypatch, kernel_trace):
    """Programs repeat their step ``w`` times (a program variable): ten times in waves 5
    to 9 and in one program of wave 20, once elsewhere. Waves of other programs are not
    taken for copies of the ones before them."""
    chip = load_arch("h100-sxm")
    wave = chip.num_cores  # 64 warps: one program per SM
    steps = [{"repeat": "w", **streaming_steps()[0]}]
    weights = [10 if 5 <= i // wave < 10 or i == 20 * wave + 3 else 1 for i in range(30 * wave)]
    trace = kernel_trace([len(weights)], steps, resources={"warps": 64}, program_vars={"w": weights})
    slow, fast, booked = replayed_and_forwarded(monkeypatch, trace, chip)
    assert_same(slow, fast)
    assert booked


def test_timelines_replay_every_wave(monkeypatch, kernel_trace):
    chip = load_arch("h100-sxm")
    trace = kernel_trace([10 * chip.num_cores], streaming_steps(), resources={"warps": 64})
    sim = simulate_kernel(trace, chip, timeline=True)
    assert len([s for s in sim.segments if s.track != "kernel start"]) == 10
