"""The example traces under traces/ load and replay on a GPU and a TPU."""

from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.trace.kernel import load_trace

TRACES = sorted((Path(__file__).resolve().parents[2] / "traces").rglob("*.json"))


def test_there_are_shipped_traces():
    assert len(TRACES) >= 3


@pytest.mark.parametrize("path", TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("arch", ["tpu-v5e", "h100-sxm"])
def test_replays(path, arch):
    trace = load_trace(path)
    sim = simulate_kernel(trace, load_arch(arch))
    assert sim.latency_s > 0
    assert sim.flops >= 0
