"""The microbenchmark suite on the CPU (Triton's interpreter, tiny sizes): every benchmark
checked, timed and written in the microbenchmark format (the published microbenchmarks'
schema), a file that validation passes over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import microbenchmark_format as micro_fmt
from accelsim.validate.compare import read_measurements

pytest.importorskip("torch")
pytest.importorskip("triton")

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "measure_micro.py"


def test_every_benchmark_is_checked_and_written(tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "microbenchmarks.json").read_text())
    assert data["kind"] == "microbenchmarks" and data["skipped"] == []
    assert micro_fmt.validate_file(data) == []  # the schema of the published microbenchmarks
    kinds = {r["benchmark"] for r in data["records"]}
    # cta_cost when the larger grid took longer; clock_under_load only where NVML reads a clock
    assert {"load_latency", "read_bandwidth", "cache_bandwidth", "mma_throughput", "mma_latency",
            "launch_overhead", "flushed_read"} <= kinds <= {*micro_fmt.BENCHMARKS}
    for record in data["records"]:
        assert record["latency_s"] > 0 and record["source"].startswith("validation/measure_micro.py on cpu")
    reads = [r for r in data["records"] if r["benchmark"] == "read_bandwidth"]
    assert all(r["params"]["bytes_in_flight_per_sm"] == r["params"]["programs_per_sm"] * r["params"]["block_elements"] * 4
               for r in reads)
    flushed = [r for r in data["records"] if r["benchmark"] == "flushed_read"]
    assert sorted(r["params"]["flush"] for r in flushed) == ["read", "write", "write-idle"]
    assert all(r["params"]["working_set_bytes"] == flushed[0]["params"]["working_set_bytes"] for r in flushed)
    waits = [r for r in data["records"] if r["params"].get("wait")]
    assert sorted(r["params"]["wait"] for r in waits) == ["each group waited for", "one group in flight"]
    assert {r["params"]["shape"] for r in waits} == {"m64n64k16"} and all(r["params"]["num_warps"] == 4 for r in waits)
    assert read_measurements([tmp_path]) == []  # not kernel records: validate passes over the file
