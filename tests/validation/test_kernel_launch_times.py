"""Each kernel one call launches, with its device time: the median over profiled calls,
in launch order, and nothing when the calls launched different kernels."""

from __future__ import annotations

import pytest

import measure_gpu


def test_each_launch_takes_its_median_over_the_calls():
    calls = [("split", 9e-6), ("combine", 2e-6), ("split", 11e-6), ("combine", 4e-6), ("split", 10e-6), ("combine", 3e-6)]
    assert measure_gpu.launch_times(calls, 3) == [{"name": "split", "device_s": 10e-6},
                                                   {"name": "combine", "device_s": 3e-6}]


def test_a_kernel_launched_twice_in_a_call_keeps_both_places():
    calls = [("cast", 1e-6), ("gemm", 5e-6), ("cast", 2e-6)] * 2
    assert [k["name"] for k in measure_gpu.launch_times(calls, 2)] == ["cast", "gemm", "cast"]


def test_calls_that_launched_different_kernels_give_none():
    assert measure_gpu.launch_times([("autotune", 1e-6), ("gemm", 5e-6), ("gemm", 5e-6)], 2) is None
    assert measure_gpu.launch_times([("a", 1e-6), ("b", 1e-6), ("b", 1e-6), ("a", 1e-6)], 2) is None
    assert measure_gpu.launch_times([], 3) is None


def test_the_gpu_plan_measures_batch_one_decode():
    plan = measure_gpu.attention_plan("gpu")
    ours = [p for p in plan if p["batch"] == 1 and p["seq_q"] == 1 and p["kv_heads"] == 4]
    assert sorted(p["seq_kv"] for p in ours) == [1024, 4096, 16384, 65536]


def test_the_format_takes_them():
    import measurement_format as fmt

    record = {"id": "x", "family": "copy", "implementation": "i", "params": {"bytes": 1024}, "latency_s": 1e-5,
              "samples_s": [], "flops": 0, "bytes": 2048, "measured": True, "source": "s", "notes": "",
              "kernel_device_s": measure_gpu.launch_times([("copy", 4e-6), ("copy", 5e-6)], 2)}
    assert fmt.validate_record(record, "copy") == []


@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_each_profiled_call_follows_a_flush():
    import torch

    order = []

    class Device:
        def sync(self):
            pass

    a = torch.ones(4, 4)
    names, launches = measure_gpu.kernel_launches(lambda: order.append("call") or a @ a, Device(),
                                                  lambda: order.append("flush"))
    assert order == ["flush", "call"] * measure_gpu.PROFILED_CALLS
    assert names == [] and launches is None  # no CUDA kernels on the CPU
