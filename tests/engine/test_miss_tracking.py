"""The SM's miss tracking (``local_memory.load_bytes_in_flight``): an SM keeps at most that
many bytes of its threads' loads in flight, each for its level's latency, so its loads move
at most ``load_bytes_in_flight / latency`` bytes per second however many its programs ask
for (Little's law), its co-resident programs divide that, loads that all fit in flight at
once take one latency, and TMA copies are not held to it. Closed forms on an ideal chip
whose HBM latency is the only cost of a load: every block is read once (no L2 hit)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import latency_lower_bound_s, shared_cache_hits, simulate_kernel

LATENCY_S = 1e-6
IN_FLIGHT = 16 * 1024
BLOCK = 64 * 1024


def _chips(ideal_chip, latency_s: float = LATENCY_S):
    latency = f"hbm.latency={latency_s * 1e9:g} ns"
    return ideal_chip("h100-sxm", latency), ideal_chip("h100-sxm", latency, f"local_memory.load_bytes_in_flight={IN_FLIGHT}B")


def _reader(kernel_trace, programs: int, blocks: int, block: int = BLOCK, **kernel):
    """``programs`` programs, each reading ``blocks`` blocks of its own, one per iteration,
    with a deep pipeline (many loads of its own in flight)."""
    steps = [{"repeat": blocks, "loop_var": "i", "transfers": [{"tensor": "X", "block": ["p0", "i"], "bytes": block}]}]
    return kernel_trace([programs], steps, pipeline_depth=8, resources={"warps": 4}, **kernel)


def test_an_sm_moves_its_in_flight_bytes_per_latency(ideal_chip, kernel_trace):
    free, tracked = _chips(ideal_chip)
    blocks = 64
    trace = _reader(kernel_trace, free.num_cores, blocks)
    alone, held = simulate_kernel(trace, free), simulate_kernel(trace, tracked)
    per_sm = blocks * BLOCK
    # one program per SM: its loads move IN_FLIGHT bytes per latency, the first latency included
    assert held.latency_s == pytest.approx(per_sm * LATENCY_S / IN_FLIGHT, rel=0.02)
    assert held.latency_s > 1.5 * alone.latency_s  # HBM-bound without the limit
    assert held.hbm_bytes == alone.hbm_bytes
    bound = latency_lower_bound_s(trace, tracked, shared_cache_hits(trace, tracked))
    assert bound <= held.latency_s * (1 + 1e-9)


def test_co_resident_programs_divide_it(ideal_chip, kernel_trace):
    _, tracked = _chips(ideal_chip)
    one = simulate_kernel(_reader(kernel_trace, tracked.num_cores, 64), tracked)
    four = simulate_kernel(_reader(kernel_trace, 4 * tracked.num_cores, 16), tracked)
    assert four.programs_per_core >= 4
    # the same bytes per SM through the same tracking: the same time, however they are split
    assert four.latency_s == pytest.approx(one.latency_s, rel=0.03)


def test_loads_that_fit_in_flight_take_one_latency(ideal_chip, kernel_trace):
    free, tracked = _chips(ideal_chip, 10 * LATENCY_S)  # a latency long enough that HBM is idle
    # four programs per SM, each loading 4 KiB at once: 16 KiB in flight, no more than the SM keeps
    trace = _reader(kernel_trace, 4 * free.num_cores, 1, block=IN_FLIGHT // 4)
    assert simulate_kernel(trace, tracked).latency_s == simulate_kernel(trace, free).latency_s
    # twice that: the SM's loads take two latencies where they took one
    more = _reader(kernel_trace, 4 * free.num_cores, 1, block=IN_FLIGHT // 2)
    assert simulate_kernel(more, tracked).latency_s == pytest.approx(2 * 10 * LATENCY_S, rel=0.01)
    assert simulate_kernel(more, free).latency_s < 1.2 * 10 * LATENCY_S


def test_tma_copies_are_not_held_to_it(ideal_chip, kernel_trace):
    free, tracked = _chips(ideal_chip)
    trace = _reader(kernel_trace, free.num_cores, 64, execution={"loads": "tma"})
    assert simulate_kernel(trace, tracked).latency_s == simulate_kernel(trace, free).latency_s


def test_absent_means_no_limit():
    assert load_arch("h100-sxm").local.load_bytes_in_flight == 0.0
    assert load_arch("h100-sxm", ["local_memory.load_bytes_in_flight=32 KiB"]).local.load_bytes_in_flight == 32768
