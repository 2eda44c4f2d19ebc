"""The example traces under traces/ load and replay on a GPU and a TPU."""

from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.trace.kernel import load_trace

TARGETS = {"pallas": ("tpu-v5e", "tpu-v6e"), "triton": ("h100-sxm", "a100-sxm4-80gb")}
TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"
TRACES = sorted(path for folder in TARGETS for path in (TRACES_DIR / folder).rglob("*.json"))
"""Kernel traces; traces/system/ holds system traces (tests/importers/test_hlo_example.py)."""


def test_there_are_shipped_traces():
    assert len(TRACES) >= 3


CASES = [(path, arch) for path in TRACES for arch in TARGETS[path.parent.name]]


@pytest.mark.parametrize("path, arch", CASES, ids=lambda v: v if isinstance(v, str) else f"{v.parent.name}/{v.name}")
def test_replays_on_the_chips_it_was_written_for(path, arch):
    trace = load_trace(path)
    sim = simulate_kernel(trace, load_arch(arch))
    assert sim.latency_s > 0
    assert sim.flops > 0
