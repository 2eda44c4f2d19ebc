"""measure_triton.py on the CPU: our Triton kernels in Triton's interpreter at tiny sizes,
checked, timed and written in the measurement format with their configs."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

import measurement_format as fmt  # noqa: E402


@pytest.fixture(scope="module")
def quick(tmp_path_factory, run_script):
    return run_script("measure_triton.py", tmp_path_factory.mktemp("triton"), "--device", "cpu", "--quick",
                      env={"TRITON_INTERPRET": "1"})


def test_every_kernel_is_checked_measured_and_valid(quick):
    files, _ = quick
    assert sorted(files) == ["attention", "gemm", "layernorm", "rmsnorm", "softmax"]
    for family, data in files.items():
        assert fmt.validate_measurement_file(data) == [], family
        assert data["skipped"] == [] and data["checks"]
        assert all(c["passed"] and c["rel_error"] <= c["tolerance"] for c in data["checks"])
        for record in data["records"]:
            assert record["latency_s"] == statistics.median(record["samples_s"])
            assert "--triton-" in record["id"] and record["config"]
            assert "kernels/triton/" in record["implementation"]


def test_matmul_config_is_the_simulators_vocabulary(quick):
    files, _ = quick
    config = files["gemm"]["records"][0]["config"]
    assert set(config) == {"block_m", "block_n", "block_k", "group_m", "split_k", "num_stages", "num_warps"}


def test_prints_a_short_table_last(quick):
    _, stdout = quick
    lines = stdout.strip().splitlines()
    assert lines[-6].split()[:4] == ["triton", "family", "measured", "skipped"]


def test_transposed_b_is_its_own_implementation(quick):
    """The decode GEMM is measured with B = W.T too (nn.Linear's layout, as inductor hands it
    to the kernel); its records must rank apart from row-major B's."""
    files, _ = quick
    records = files["gemm"]["records"]
    transposed = [r for r in records if "--triton-matmul-bt" in r["id"]]
    row_major = [r for r in records if "--triton-matmul-" in r["id"] and r not in transposed]
    assert transposed and row_major
    assert {r["implementation"] for r in transposed}.isdisjoint({r["implementation"] for r in row_major})
    assert all("W.T" in r["implementation"] for r in transposed)
