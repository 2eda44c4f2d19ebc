"""The replay's shortcuts (identical whole waves added at once, runs of identical programs
timed once) never change a result: random kernels of runs of equal programs, with tails
and kernel boundaries, on a plain and on a queueing chip, against the replay without them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.arch.model import load_arch
from accelsim.engine.chip import PLAIN, Shortcuts, simulate_kernel
from accelsim.trace.kernel import KernelTrace

CHIPS = {name: load_arch(name) for name in ("h100-sxm", "h200-sxm-calibrated")}


def trace_of(weights: list[int], warps: int, starts: list[int]) -> KernelTrace:
    step = {"repeat": "w",
            "transfers": [{"tensor": "X", "block": ["p0"], "bytes": 2048},
                          {"tensor": "Y", "block": ["p0"], "bytes": 1024, "direction": "write"}],
            "compute": [{"unit": "vector", "flops": 4096.0, "dtype": "fp32"}]}
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": "runs", "grid": [len(weights)], "resources": {"warps": warps},
                   "kernel_starts": starts or None},
        "tensors": {"X": {"shape": [1 << 30], "dtype": "bf16"}, "Y": {"shape": [1 << 30], "dtype": "bf16"}},
        "templates": [{"name": "only", "steps": [step]}],
        "program_vars": {"w": weights},
    })


runs = st.lists(st.tuples(st.sampled_from([1, 2, 5]), st.integers(1, 1200)), min_size=1, max_size=4)


@settings(max_examples=50, deadline=None)
@given(runs=runs, warps=st.sampled_from([4, 16, 64]), chip=st.sampled_from(sorted(CHIPS)),
       cut=st.floats(0, 1), boundary=st.booleans())
def test_shortcuts_do_not_change_results(runs, warps, chip, cut, boundary):
    weights = [w for w, count in runs for _ in range(count)]
    starts = [max(1, int(cut * (len(weights) - 1)))] if boundary and len(weights) > 1 else []
    trace = trace_of(weights, warps, starts)
    fast = simulate_kernel(trace, CHIPS[chip], shortcuts=Shortcuts(runs_from=16))  # runs on small kernels too
    slow = simulate_kernel(trace, CHIPS[chip], shortcuts=PLAIN)
    assert fast.latency_s == slow.latency_s
    assert fast.events == slow.events
    assert fast.utilization == pytest.approx(slow.utilization, rel=1e-9, abs=1e-12)
