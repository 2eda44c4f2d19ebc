"""waynehacking8/blackwell-tensorcore-kernels' SGEMM rows of ``bench_sm90a.csv`` @fd74d2ac timed a
cuBLAS handle's creation and destruction with every call: the converter leaves them out, and takes
the kernels' own device times from the same repository's Nsight Systems summaries instead."""

from __future__ import annotations

import json
from pathlib import Path

import build_reference

REFERENCE = Path(build_reference.__file__).parent
BENCH = "github.com/waynehacking8/blackwell-tensorcore-kernels results/bench_sm90a.csv @fd74d2ac"


def _bench_row(workload: str) -> dict:
    return {"category": "gemm", "hardware": "NVIDIA H100 80GB HBM3 (SXM5)", "workload": workload,
            "parameters": {"M": 2048, "N": 2048, "K": 2048, "time_ms": 0.787}, "metric": "throughput",
            "value": 21.82, "unit": "TFLOP/s", "source": BENCH, "notes": "test row.", "measured": True}


def test_the_sgemm_bench_row_is_left_out_with_its_reason():
    outcome = build_reference.convert_fixed_shape_gemm(_bench_row("cublasSgemm FP32 (CUDA cores)"))
    assert isinstance(outcome, build_reference.LeftOut)
    assert "handle" in outcome.reason


def test_the_tensor_core_bench_rows_kept_their_handle_and_stay():
    outcome = build_reference.convert_fixed_shape_gemm(_bench_row("cublasGemmEx FP32 in, TF32 compute"))
    assert isinstance(outcome, build_reference.Converted)
    assert outcome.record["params"]["dtype"] == "tf32"


def test_a_kernel_summary_row_is_the_kernels_device_time():
    row = {"category": "gemm", "hardware": "NVIDIA H100 80GB HBM3 (SXM5)",
           "workload": "cublasSgemm FP32 (CUDA cores), its kernel's device time (Nsight Systems cuda_gpu_kern_sum)",
           "parameters": {"M": 4096, "N": 4096, "K": 4096, "kernel": "sm80_xmma_gemm_f32f32", "instances": 12},
           "metric": "median kernel time", "value": 2604287, "unit": "ns", "source": "test row",
           "notes": "test row.", "measured": True}
    record = build_reference.convert_nsys_kernel_summary(row).record
    assert record["latency_kind"] == "device"
    assert record["latency_s"] == 2604287e-9
    assert record["params"] == {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp32", "batch": 1, "impl": "cublas"}


def test_the_committed_h100_file_has_no_bench_sgemm_and_the_six_kernel_times():
    records = json.loads((REFERENCE / "h100-sxm" / "gemm.json").read_text())["records"]
    assert not [r for r in records if r["params"]["dtype"] == "fp32" and "bench_sm90a.csv" in r["source"]]
    nsys = [r for r in records if r["id"].endswith("--cublas-nsys")]
    assert sorted((r["params"]["dtype"], r["params"]["M"]) for r in nsys) == [
        ("fp16", 4096), ("fp16", 8192), ("fp32", 4096), ("fp32", 8192), ("tf32", 4096), ("tf32", 8192)]
