"""A measurement tool's per-call overhead: added to what it timed, nothing to nccl-tests."""

import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.validate.collectives import (
    TOOL_CALL_OVERHEAD_S, CollectiveMeasurement, predict, tool_overhead_s, with_added_latency,
)


@pytest.fixture(scope="module")
def topo():
    return build_topology(load_arch("dgx-h100"))


def _record(tool: str, size_bytes: float) -> CollectiveMeasurement:
    return CollectiveMeasurement(id=f"t-{tool}-{size_bytes:g}", system="dgx-h100", collective="all-reduce", ranks=8,
                                 size_bytes=size_bytes, algorithm="auto", time_s=1e-3, source="test", tool=tool)


def test_nccl_tests_records_carry_no_overhead(topo):
    m = _record("nccl-tests", 32768)
    assert tool_overhead_s("nccl-tests") == 0.0
    assert predict(topo, m) == simulate_collective(topo, "all-reduce", 32768, "auto", 8)


def test_torch_distributed_adds_its_overhead_once_per_call(topo):
    overhead = TOOL_CALL_OVERHEAD_S["torch.distributed"]
    assert 1e-6 < overhead < 100e-6  # a host dispatch: microseconds, not a collective's cost
    for size in (32768, 2**30):
        bare = simulate_collective(topo, "all-reduce", size, "auto", 8)
        timed = predict(topo, _record("torch.distributed", size))
        assert math.isclose(timed.latency_s, bare.latency_s + overhead, rel_tol=1e-12)
        assert timed.busbw_bytes_per_s < bare.busbw_bytes_per_s
        assert (timed.algorithm, timed.protocol) == (bare.algorithm, bare.protocol)


def test_added_latency_keeps_the_bandwidths_consistent(topo):
    bare = simulate_collective(topo, "all-reduce", 2**20, "auto", 8)
    timed = with_added_latency(bare, 10e-6)
    assert math.isclose(timed.algbw_bytes_per_s, timed.size_bytes / timed.latency_s)
    assert math.isclose(timed.busbw_bytes_per_s / timed.algbw_bytes_per_s, bare.busbw_bytes_per_s / bare.algbw_bytes_per_s)
    assert with_added_latency(bare, 0.0) is bare


def test_an_explicit_overhead_overrides_the_tools(topo):
    m = _record("torch.distributed", 65536)
    assert predict(topo, m, tool_overhead=0.0) == simulate_collective(topo, "all-reduce", 65536, "auto", 8)


def test_the_committed_overhead_is_what_its_fit_gives(report_collectives):
    report = report_collectives
    value, train_mape, held_mape = report.fit_tool_overhead(report.load_measurements(report.MEASUREMENTS))
    assert value == pytest.approx(TOOL_CALL_OVERHEAD_S[report.TOOL_FITTED[1]], abs=0.1e-6)
    assert train_mape < 0.1 and held_mape < 0.1
