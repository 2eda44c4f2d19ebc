"""A kernel's first programs start on an idle chip: nothing moves until the first has
paid its overhead and its first load's latency, so an HBM-bound first wave takes that
startup plus its bytes at HBM's bandwidth; a wave bound by its own programs' time is
unchanged, later waves hide their startups behind running programs, and each kernel of a
trace (``kernel_starts``) starts anew."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import simulate_kernel

LATENCY, OVERHEAD = 600e-9, 400e-9
BLOCK = 1 << 20  # 1 MiB per program: one wave of 132 moves 132 MiB


def _chip(ideal_chip, *more):
    return ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", f"cores.program_overhead={OVERHEAD * 1e9:g} ns",
                      *more)


def _reads(kernel_trace, programs: int, starts=None, nbytes: int = BLOCK):
    return kernel_trace([programs], [{"transfers": [{"tensor": "X", "block": ["p0"], "bytes": nbytes}]}],
                        pipeline_depth=1, kernel_starts=starts)


def test_an_hbm_bound_first_wave_waits_its_startup_then_streams(ideal_chip, kernel_trace):
    chip = _chip(ideal_chip)
    n = chip.num_cores
    sim = simulate_kernel(_reads(kernel_trace, n), chip)
    assert sim.bound == "hbm"
    hbm = n * BLOCK / chip.hbm.bandwidth_bytes_per_s
    # spread over the program's whole time the startup used to hide under the bandwidth
    assert sim.latency_s == pytest.approx(LATENCY + OVERHEAD + hbm, rel=1e-6)


def test_a_wave_bound_by_its_programs_is_unchanged(ideal_chip, kernel_trace):
    """Two programs, nowhere near HBM's bandwidth: each takes its own time alone."""
    chip = _chip(ideal_chip)
    port = chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz
    sim = simulate_kernel(_reads(kernel_trace, 2, nbytes=4096), chip)
    assert sim.latency_s == pytest.approx(LATENCY + OVERHEAD + 4096 / port, rel=1e-6)


def test_later_waves_hide_their_startups(ideal_chip, kernel_trace):
    """Four waves, HBM-bound: one startup in all, not one per wave."""
    chip = _chip(ideal_chip)
    n = 4 * chip.num_cores
    sim = simulate_kernel(_reads(kernel_trace, n), chip)
    hbm = n * BLOCK / chip.hbm.bandwidth_bytes_per_s
    assert LATENCY + OVERHEAD + hbm <= sim.latency_s < 2 * (LATENCY + OVERHEAD) + hbm


def test_each_kernel_of_a_trace_starts_anew(ideal_chip, kernel_trace):
    chip = _chip(ideal_chip)
    n = chip.num_cores
    one = simulate_kernel(_reads(kernel_trace, n), chip)
    two = simulate_kernel(_reads(kernel_trace, 2 * n, starts=[n]), chip)
    assert two.latency_s == pytest.approx(2 * one.latency_s, rel=1e-6)


def test_a_timeline_shows_the_wait(ideal_chip, kernel_trace):
    chip = _chip(ideal_chip)
    n = chip.num_cores
    sim = simulate_kernel(_reads(kernel_trace, 2 * n, starts=[n]), chip, timeline=True)
    waits = [s for s in sim.segments if s.track == "kernel start"]
    assert len(waits) == 2  # one per kernel of the trace
    assert all(s.end_ps - s.start_ps == round((LATENCY + OVERHEAD) * 1e12) for s in waits)
    assert simulate_kernel(_reads(kernel_trace, 2 * n, starts=[n]), chip).latency_s == sim.latency_s
