"""``validate`` and ``calibrate`` read a measured step's records directly (``accelsim import
profile``), each record of its own family; calibrate still fits on microbenchmark-level ones only."""

from __future__ import annotations

import json

import pytest

from accelsim.validate.compare import read_measurements
from tests.importers.profile_fixtures import KINETO_H100


@pytest.fixture(scope="module")
def step_file(tmp_path_factory):
    from accelsim.cli.main import main

    out = tmp_path_factory.mktemp("step") / "step.json"
    assert main(["import", "profile", str(KINETO_H100), "--arch", "h100-sxm", "-o", str(out)]) == 0
    return out


def test_a_measured_step_holds_records_of_several_families(step_file):
    records = read_measurements([step_file])
    assert {m.family for m in records} == {"gemm", "attention", "layernorm", "elementwise"}
    assert all(m.arch == "h100-sxm" and m.latency_kind == "device" for m in records)
    gemm = next(m for m in records if m.id == "gemm-bf16-8192x6144x4096--cublas")
    assert gemm.params["impl"] == "cublas" and gemm.file == str(step_file)


def test_calibrate_refuses_its_kernel_level_records_naming_the_file(cli, step_file, tmp_path):
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(step_file), "--fit", "hbm.efficiency",
                 "-o", str(tmp_path / "fit.yaml"))
    assert result.code == 2 and "kernel-level records" in result.err and str(step_file) in result.err
    assert not (tmp_path / "fit.yaml").exists()


def test_a_record_of_an_unknown_family_in_a_step_is_refused(step_file, tmp_path):
    data = json.loads(step_file.read_text())
    data["records"][0]["family"] = "conv"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(Exception, match="records\\[0\\].family: unknown family 'conv'"):
        read_measurements([bad])
