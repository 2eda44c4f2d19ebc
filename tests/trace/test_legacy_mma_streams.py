"""Traces written before 2026-12-09 named a program's consumer streams ``resources.mma_streams``;
they still load, as ``kernel.execution.consumers``, and replay as they did."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import instruction_streams, simulate_kernel
from accelsim.errors import InputError
from accelsim.trace.kernel import parse_trace

MATRIX = {"unit": "matrix", "flops": 2.0 * 128 * 128 * 128, "dtype": "bf16", "shape": [128, 128, 128]}


def data(resources: dict, **kernel) -> dict:
    return {"schema_version": 1,
            "kernel": {"name": "k", "grid": [4], "resources": resources, **kernel},
            "tensors": {"K": {"shape": [4096], "dtype": "int8"}},
            "templates": [{"name": "t", "steps": [{"repeat": 8, "transfers": [{"tensor": "K", "bytes": 4096}],
                                                   "compute": [MATRIX, {"unit": "special", "flops": 16384.0}]}]}]}


def test_an_old_trace_reads_its_streams_as_consumers():
    old = parse_trace(data({"warps": 12, "mma_streams": 1}), "old.json")
    new = parse_trace(data({"warps": 12}, execution={"consumers": 1}), "new.json")
    h100 = load_arch("h100-sxm")
    assert old.kernel.execution.consumers == 1 and instruction_streams(old, h100) == 1
    assert simulate_kernel(old, h100).latency_s == simulate_kernel(new, h100).latency_s


def test_streams_of_a_later_kernel_are_read_too_and_execution_wins():
    both = data({"warps": 4}, execution={"consumers": 2}, kernel_starts=[2], kernel_resources=[{"warps": 12, "mma_streams": 3}])
    trace = parse_trace(both, "old.json")
    assert trace.kernel.execution.consumers == 2
    assert "mma_streams" not in trace.kernel.kernel_resources[0].model_dump()


def test_a_bad_legacy_value_is_refused_in_one_line():
    with pytest.raises(InputError, match="mma_streams: expected a positive integer"):
        parse_trace(data({"warps": 12, "mma_streams": "two"}), "old.json")
