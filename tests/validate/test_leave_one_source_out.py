"""``validate --leave-one-source-out``: each source's records predicted with values fitted on
the microbenchmark-level records of the other sources only."""

from __future__ import annotations

import json

import pytest

from accelsim.validate.calibrate import DEFAULT_PARAMETERS
from accelsim.validate.compare import read_measurements
from accelsim.validate.leave_one_out import leave_one_source_out
from tests.synthetic_measurements import write_rmsnorm, write_stream

TRUTH = ["hbm.efficiency=0.7"]
HBM = [p for p in DEFAULT_PARAMETERS if p.path == "hbm.efficiency"]


def _with_source(path, source):
    data = json.loads(path.read_text())
    for record in data["records"]:
        record["source"] = source
        record["id"] += "-" + source.split("/")[-1]
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """STREAM kernels from two repositories and rmsnorm from a third, all timed on an H100
    whose HBM runs at 0.7 of its datasheet (published: 0.9)."""
    folder = tmp_path_factory.mktemp("m")
    a = folder / "a.json"
    write_stream(a, TRUTH, [(2**22, 1, 1), (2**24, 2, 1)])
    _with_source(a, "github.com/one/streams")
    b = folder / "b.json"
    write_stream(b, TRUTH, [(2**23, 0, 1), (2**24, 1, 0)])
    _with_source(b, "github.com/two/streams")
    norms = folder / "norms.json"
    write_rmsnorm(norms, TRUTH, [(16384, 4096), (16384, 8192)])
    _with_source(norms, "github.com/three/norms")
    return folder


def test_each_source_is_predicted_with_a_fit_on_the_others(measured):
    records = read_measurements([measured])
    results = {r.source: r for r in leave_one_source_out(records, "h100-sxm", HBM)}
    assert list(results) == ["one/streams", "three/norms", "two/streams"]
    norms = results["three/norms"]
    assert norms.train_sources == ("one/streams", "two/streams") and norms.train_records == 4
    assert norms.mape_given > 0.15 and norms.mape_fitted < 0.02  # the STREAM fit carries to the norms
    streams = results["one/streams"]
    assert streams.train_sources == ("two/streams",)  # the norms are kernel-level: never fitted on
    assert len(streams.overrides) == 1 and streams.overrides[0].startswith("hbm.efficiency=")
    assert streams.mape_fitted < 0.02 < streams.mape_given


def test_validate_writes_the_section_and_fit_needs_the_mode(cli, measured, tmp_path):
    out = tmp_path / "report"
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(measured), "--leave-one-source-out",
                 "--fit", "hbm.efficiency", "-o", str(out))
    assert result.code == 0, result.err
    text = (out / "report.md").read_text()
    section = text.split("## Leave one source out")[1].split("## ")[0]
    assert "| three/norms | 2 | 4 records of one/streams, two/streams | hbm.efficiency=" in section
    assert "--leave-one-source-out --fit hbm.efficiency" in text  # the command that regenerates it
    refused = cli("validate", "--arch", "h100-sxm", "--measurements", str(measured), "--fit", "hbm.efficiency",
                  "-o", str(tmp_path / "r2"))
    assert refused.code == 2 and "--fit" in refused.err and not (tmp_path / "r2").exists()
