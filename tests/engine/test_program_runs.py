"""Runs of identical programs are timed once per run: the same results as timing every
program, and replays memoised per run never stand in for a kernel whose runs differ."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine import chip as engine
from accelsim.engine.chip import Shortcuts, simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.engine.shortcuts import program_runs


EVERY_PROGRAM = Shortcuts(runs_from=None)


def weighted_trace(kernel_trace, weights, warps=4):
    """Programs that repeat one streaming step (a load and a store) ``w`` times (a program
    variable)."""
    steps = [{"repeat": "w",
              "transfers": [{"tensor": "X", "block": ["p0"], "bytes": 4096},
                            {"tensor": "Y", "block": ["p0"], "bytes": 4096, "direction": "write"}],
              "compute": [{"unit": "vector", "flops": 2048.0, "dtype": "fp32"}]}]
    return kernel_trace([len(weights)], steps, resources={"warps": warps}, program_vars={"w": weights})


def same(a, b):
    assert a.latency_s == b.latency_s
    assert a.events == b.events
    assert a.utilization == pytest.approx(b.utilization, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("chip_name", ["h100-sxm", "h200-sxm-calibrated"])  # the second queues at HBM
def test_runs_give_the_per_program_result(kernel_trace, chip_name):
    chip = load_arch(chip_name)
    weights = [1] * 9000 + [3] * 5000 + [1] * 7001 + [2]  # runs, and a last program alone
    trace = weighted_trace(kernel_trace, weights)
    assert len(program_runs(*_inputs(trace, chip))[0]) == 4
    by_run = simulate_kernel(trace, chip)
    assert (by_run.hbm_queueing_s or 0) > 0 or chip_name == "h100-sxm"
    assert len(program_runs(*_inputs(trace, chip), runs_from=None)[0]) == len(weights)
    same(simulate_kernel(trace, chip, shortcuts=EVERY_PROGRAM), by_run)


def test_a_memo_keeps_kernels_with_the_same_runs_in_other_places_apart(kernel_trace):
    chip = load_arch("h100-sxm")
    early = weighted_trace(kernel_trace, [4] * 4096 + [1] * 8192)
    late = weighted_trace(kernel_trace, [4] * 8192 + [1] * 4096)
    memo: dict = {}
    simulate_kernel(early, chip, replays=memo)
    same(simulate_kernel(late, chip, replays=memo), simulate_kernel(late, chip))
    assert len(memo) == 2


def _inputs(trace, chip):
    costs = program_costs(trace, chip)
    hits, absorbed = engine.shared_cache_hits(trace, chip)
    return costs, hits, absorbed


def test_the_lower_bound_is_the_per_program_one(kernel_trace):
    chip = load_arch("h100-sxm")
    trace = weighted_trace(kernel_trace, [1] * 6000 + [7] * 3000 + [1] * 5000 + [2], warps=64)
    hits = engine.shared_cache_hits(trace, chip)
    by_run = (engine.latency_lower_bound_s(trace, chip), engine.latency_lower_bound_s(trace, chip, hits))
    assert (engine.latency_lower_bound_s(trace, chip, shortcuts=EVERY_PROGRAM),
            engine.latency_lower_bound_s(trace, chip, hits, shortcuts=EVERY_PROGRAM)) == by_run
    assert by_run[1] <= simulate_kernel(trace, chip).latency_s
