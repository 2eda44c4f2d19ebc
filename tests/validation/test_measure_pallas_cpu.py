"""measure_pallas.py on the CPU: our Pallas kernels in interpret mode at tiny sizes, checked,
timed and written in the measurement format, with each case's GPU (Triton) lowering tried."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("jax")

import measurement_format as fmt  # noqa: E402


@pytest.fixture(scope="module")
def quick(tmp_path_factory, run_script):
    return run_script("measure_pallas.py", tmp_path_factory.mktemp("pallas"), "--device", "cpu", "--quick")


def test_one_valid_file_per_family(quick):
    files, _ = quick
    assert sorted(files) == ["attention", "gemm", "layernorm", "rmsnorm", "softmax"]
    for family, data in files.items():
        assert fmt.validate_measurement_file(data) == [], family
        assert data["family"] == family
        assert data["device"]["name"] == "cpu" and data["device"]["arch"] is None
        assert data["provenance"]["versions"]["jax"]


def test_every_case_passes_its_check_and_is_measured(quick):
    files, _ = quick
    for data in files.values():
        assert data["skipped"] == []
        assert data["checks"] and all(c["passed"] and c["rel_error"] <= c["tolerance"] for c in data["checks"])
        for record in data["records"]:
            assert record["latency_s"] == statistics.median(record["samples_s"])
            assert record["flops"] == fmt.nominal_flops(record["family"], record["params"])
            assert "interpret lowering" in record["implementation"]
            assert "--pallas-" in record["id"]


def test_records_name_their_config(quick):
    files, _ = quick
    gemm = files["gemm"]["records"][0]
    assert {"block_m", "block_n", "block_k"} <= set(gemm["config"])
    assert {r["config"]["block_rows"] for r in files["rmsnorm"]["records"]} == {8}


def test_gpu_lowering_is_tried_without_a_gpu(quick):
    files, _ = quick
    rms = files["rmsnorm"]["records"][0]["gpu_lowering"]
    assert rms["triton"] == "ok"
    matmul = files["gemm"]["records"][0]["gpu_lowering"]
    assert "scratch" in matmul["triton"]  # the TPU-style accumulator does not lower to Triton
    jax_mha = next(r for r in files["attention"]["records"] if "jax-mha" in r["id"])
    assert jax_mha["gpu_lowering"] == {"triton": "ok"}


def test_the_gpu_variants_lower_to_triton_where_the_tpu_kernels_do_not(quick):
    files, _ = quick
    matmul_gpu = next(r for r in files["gemm"]["records"] if "pallas-matmul-gpu" in r["id"])
    attention_gpu = next(r for r in files["attention"]["records"] if "pallas-attention-gpu" in r["id"])
    assert matmul_gpu["gpu_lowering"] == {"triton": "ok"}
    assert attention_gpu["gpu_lowering"] == {"triton": "ok"}
    attention = next(r for r in files["attention"]["records"] if "pallas-attention-" in r["id"] and "gpu" not in r["id"])
    assert "scratch" in attention["gpu_lowering"]["triton"]


def test_prints_a_short_table_last(quick):
    _, stdout = quick
    lines = stdout.strip().splitlines()
    assert lines[-6].split()[:4] == ["pallas", "family", "measured", "skipped"]
    assert [line.split()[0] for line in lines[-5:]] == ["attention", "gemm", "layernorm", "rmsnorm", "softmax"]


def test_a_wrong_kernel_fails_its_check_and_is_skipped(tmp_path, monkeypatch):
    import jax

    import measure_pallas as mp

    real = mp.KERNELS["softmax"]

    def off_by_one(p, c, interpret, device, rng):
        prepared = real.prepare(p, c, interpret, device, rng)
        return mp.Prepared(run=lambda: prepared.run() + 1.0, check=prepared.check)

    monkeypatch.setitem(mp.KERNELS, "softmax", mp.Kernel(**{**real.__dict__, "prepare": off_by_one}))
    case = mp.Case("softmax", {"rows": 16, "cols": 128, "dtype": "bf16"}, {"block_rows": 8, "num_warps": 4})
    device = jax.devices("cpu")[0]
    file = fmt.FamilyFile(tmp_path / "softmax.json", "softmax", {"name": "cpu", "arch": None}, {})
    sweep = mp.Sweep(device, False, "cpu-quick", mp.JaxTimer(device, mp.JAX_POLICIES["cpu-quick"]), float("inf"),
                     {"softmax": file})
    mp.run_case(case, 0, sweep)
    assert file.records == []
    assert "correctness check failed" in file.skipped[0]["reason"]
    assert file.checks[0]["passed"] is False
