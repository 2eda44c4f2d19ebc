"""A GPU program runs at the pace its SM's residents allow now, not at dispatch: when a
co-resident finishes with nothing to take its place, the one left speeds up to its pace
alone for the rest of its work."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import (gpu_occupancy, gpu_program_times, instruction_streams, launch_s,
                                  shared_cache_hits, simulate_kernel)
from accelsim.engine.programs import program_costs
from accelsim.trace.kernel import KernelTrace

CHIP = load_arch("h100-sxm")


def two_per_sm(long: int, short: int) -> KernelTrace:
    """One wave, two programs per SM: the first ``cores`` programs do ``long`` vector
    steps, the next ``cores`` (their co-residents, round robin) ``short`` ones."""
    cores = CHIP.num_cores
    step = {"repeat": "w",
            "transfers": [{"tensor": "X", "block": ["p0"], "bytes": 256}],
            "compute": [{"unit": "vector", "flops": 2.0 ** 20, "dtype": "fp32"}]}
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": "uneven", "grid": [2 * cores], "resources": {"warps": 32}},
        "tensors": {"X": {"shape": [1 << 20], "dtype": "fp32"}},
        "templates": [{"name": "only", "steps": [step]}],
        "program_vars": {"w": [long] * cores + [short] * cores},
    })


def test_the_long_program_finishes_alone_at_its_own_pace():
    trace = two_per_sm(long=10, short=1)
    assert gpu_occupancy(trace, CHIP)[0] == 2
    costs = program_costs(trace, CHIP)
    hits = shared_cache_hits(trace, CHIP)[0]
    times = gpu_program_times(CHIP, costs, hits, trace.kernel.pipeline_depth, instruction_streams(trace, CHIP))
    long_alone, long_shared = times.seconds(np.array([0]), 1)[0], times.seconds(np.array([0]), 2)[0]
    short_shared = times.seconds(np.array([CHIP.num_cores]), 2)[0]
    assert long_shared > 1.5 * long_alone  # SM-bound: sharing the SM nearly halves the pace
    # after the startup all wait at the kernel's start (nothing else runs), the long program
    # runs shared until its neighbour ends, then alone for what is left
    wait = times.startup.min()
    assert 0 < wait < short_shared
    expected = short_shared + (1 - (short_shared - wait) / (long_shared - wait)) * (long_alone - wait)
    body = simulate_kernel(trace, CHIP).latency_s - launch_s(trace, CHIP)
    assert body == pytest.approx(expected, rel=1e-6)
    assert body < 0.7 * long_shared  # at the pace of its dispatch it would take long_shared


def test_even_programs_are_not_rerated():
    """Programs that end together leave no one to re-rate: the same events and time as
    programs of one length (and deterministic)."""
    a, b = simulate_kernel(two_per_sm(3, 3), CHIP), simulate_kernel(two_per_sm(3, 3), CHIP)
    assert a.latency_s == b.latency_s and a.events == b.events
