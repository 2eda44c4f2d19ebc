"""``accelsim calibrate --system NODE``: a node's NCCL model fitted to collective records
(collectives files, ``import nccl-tests`` output, ``measure_collectives.py`` measurement
files), written as an overlay named by its file that extends the node; what it cannot
fit is one line, exit 2, nothing written."""

import json

import yaml

from accelsim.arch.model import load_arch
from accelsim.validate.collectives import read_collective_records

RECORDS = "validation/collectives/all_reduce.json"


def test_the_fit_lowers_the_training_error_and_writes_a_node_overlay(cli, tmp_path):
    overlay = tmp_path / "my-dgx.yaml"
    result = cli("calibrate", "--system", "dgx-h100-published", "--measurements", RECORDS, "--fit", "collectives.nvls_efficiency",
                 "--fit", "link_efficiency", "-o", str(overlay))
    assert result.code == 0, result.err
    train = next(line for line in result.out.splitlines() if line.startswith("train"))
    before, after = (float(x.rstrip("%")) for x in train.split()[2:5:2])
    assert after < before
    written = yaml.safe_load(overlay.read_text())
    assert written["kind"] == "node" and written["extends"] == "dgx-h100-published" and written["name"] == "my-dgx"
    assert written["collectives"]["nvls_efficiency"]["basis"] == "fitted"
    assert set(written["collectives"]) <= {"nvls_efficiency", "link_efficiency"}
    node = load_arch(str(overlay))
    assert node.collectives.nvls_efficiency == written["collectives"]["nvls_efficiency"]["value"]
    again = cli("calibrate", "--system", str(overlay), "--measurements", RECORDS, "-o", str(tmp_path / "b.yaml"))
    assert again.code == 2 and "calibrate the published config it extends ('dgx-h100-published')" in again.err


def test_measure_collectives_files_are_read_for_the_nodes_chip(tmp_path):
    doc = {"schema_version": 1, "kind": "measurements", "family": "collective",
           "device": {"name": "NVIDIA H100 80GB HBM3", "arch": "h100-sxm"},
           "records": [{"id": "collective-all-reduce-1048576B-8r", "implementation": "torch.distributed all_reduce (nccl)",
                        "params": {"collective": "all-reduce", "bytes": 1048576, "ranks": 8, "dtype": "fp32"},
                        "latency_s": 27e-6, "source": "validation/measure_collectives.py"}]}
    path = tmp_path / "nccl.json"
    path.write_text(json.dumps(doc))
    [record] = read_collective_records([tmp_path], "dgx-h100", "h100-sxm")
    assert (record.collective, record.ranks, record.size_bytes, record.time_s) == ("all-reduce", 8, 1048576, 27e-6)
    assert read_collective_records([tmp_path], "dgx-h200", "h200-sxm") == []


def test_what_cannot_be_fitted_is_one_line(cli, tmp_path):
    out = tmp_path / "x.yaml"
    for args, says in (
        (("--system", "h100-ib-cluster"), "is a cluster; collective records are fitted and compared on a node"),
        (("--system", "tpu-v5e-4x4"), "collective records are fitted and compared on a node"),
        (("--system", "dgx-h100-published", "--fit", "collectives.foo"), "not a calibratable collectives field"),
        (("--system", "dgx-h100", "--scope", "gemm"), "--scope applies to kernel calibration"),
        (("--system", "dgx-h100", "--arch", "h100-sxm"), "one of them"),
        ((), "give --arch CHIP"),
    ):
        result = cli("calibrate", *args, "--measurements", RECORDS, "-o", str(out))
        assert result.code == 2 and says in result.err and result.err.count("\n") == 1, (args, result.err)
        assert not out.exists()
