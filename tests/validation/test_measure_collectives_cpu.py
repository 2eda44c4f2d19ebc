"""The collectives suite on the CPU: torch.distributed over gloo on 2 processes and JAX over
8 host devices, run the way a lease runs it (``measure_gpu.py --suites collectives``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")

import measure_collectives  # noqa: E402
import measurement_format as fmt  # noqa: E402


@pytest.fixture(scope="module")
def suite(tmp_path_factory, run_script):
    root = tmp_path_factory.mktemp("collectives")
    bundle = root / "out" / "cpu.tar.gz"
    files, stdout = run_script("measure_gpu.py", root / "cpu", "--device", "cpu", "--quick", "--suites", "collectives",
                               "--bundle", str(bundle))
    return {Path(name).name: data for name, data in files.items()}, stdout, bundle


def test_both_backends_write_valid_files(suite):
    files, _, _ = suite
    assert sorted(files) == ["jax", "nccl"]
    for data in files.values():
        assert fmt.validate_measurement_file(data) == []
        assert data["family"] == "collective"
    assert files["nccl"]["device"]["count"] == 2  # two gloo processes
    assert files["jax"]["device"]["count"] == 8  # --xla_force_host_platform_device_count=8


def test_every_collective_is_checked_exactly_then_swept(suite):
    files, _, _ = suite
    for data in files.values():
        assert sorted(c["params"]["collective"] for c in data["checks"]) == sorted(fmt.COLLECTIVES)
        assert all(c["passed"] for c in data["checks"])
        swept = {(r["params"]["collective"], r["params"]["bytes"]) for r in data["records"]}
        assert swept == {(c, s) for c in fmt.COLLECTIVES for s in measure_collectives.sizes("cpu-quick")}


def test_bus_bandwidth_follows_nccl_tests(suite):
    files, _, _ = suite
    for record in files["nccl"]["records"]:
        p = record["params"]
        algbw = p["bytes"] / record["latency_s"]
        factor = {"all-reduce": 2, "all-gather": 1, "reduce-scatter": 1}[p["collective"]] * (p["ranks"] - 1) / p["ranks"]
        assert record["algbw_bytes_per_s"] == pytest.approx(algbw)
        assert record["busbw_bytes_per_s"] == pytest.approx(algbw * factor)


def test_table_last_and_bundle(suite):
    _, stdout, bundle = suite
    lines = stdout.strip().splitlines()
    assert "files in" in lines[-1]
    assert [line.split()[0] for line in lines[-3:-1]] == ["collectives/jax.json", "collectives/nccl.json"]
    with tarfile.open(bundle) as tar:
        assert sorted(tar.getnames()) == ["cpu/collectives/jax.json", "cpu/collectives/nccl.json"]


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_one_device_is_recorded_as_skipped(tmp_path, backend):
    # torch is asked for one rank; JAX, in a fresh process without XLA_FLAGS, sees one CPU device
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run([sys.executable, measure_collectives.__file__, "--backend", backend, "--device", "cpu",
                           "--ranks", "1", "--quick", "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / ("nccl.json" if backend == "torch" else "jax.json")).read_text(encoding="utf-8"))
    assert fmt.validate_measurement_file(data) == []
    assert data["records"] == []
    assert len(data["skipped"]) == len(fmt.COLLECTIVES) * len(measure_collectives.sizes("cpu-quick"))
    assert all(s["reason"].startswith("1 device") for s in data["skipped"])
