"""``accelsim validate`` on an imported profile: the records' report, and the step beside its
replay (``step.md``, one Perfetto file with both timelines, the kernels' plot)."""

from __future__ import annotations

import json
import shutil

import pytest

from accelsim.cli.main import main
from tests.importers.profile_fixtures import KINETO_H100


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("validate")
    step = folder / "step.json"
    assert main(["import", "profile", str(KINETO_H100), "--arch", "h100-sxm", "-o", str(step)]) == 0
    assert main(["validate", "--arch", "h100-sxm", "--measurements", str(step), "-o", str(folder / "out")]) == 0
    return folder


def test_the_timeline_holds_the_measured_and_the_replayed_step(report):
    trace = json.loads((report / "out" / "step.perfetto.json").read_text())
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert names == {1: "measured: NVIDIA H100 80GB HBM3", 2: "replayed: h100-sxm"}
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sum(e["pid"] == 1 for e in spans) == sum(e["pid"] == 2 for e in spans) == 14
    assert {e["tid"] for e in spans} == {"stream 7", "stream 20"}
    gemm = next(e for e in spans if e["pid"] == 2 and e["name"].startswith("sm90_xmma"))
    assert gemm["args"]["replayed as"] == "family" and gemm["args"]["error"].endswith("%")


def test_the_step_report_splits_the_step_and_lists_kernels_by_share(report):
    text = (report / "out" / "step.md").read_text()
    assert "| part | measured | replayed | difference |" in text and "| exposed communication |" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    shares = [float(line.split(" | ")[6].rstrip("%")) for line in rows]
    assert len(rows) == 11 and shares == sorted(shares, reverse=True)
    assert any("| unmapped |" in line and "as measured" in line for line in rows)
    assert (report / "out" / "step_kernels.png").stat().st_size > 0
    assert (report / "out" / "report.md").is_file()  # the records' report, with its plots
    assert (report / "out" / "predicted_vs_measured.png").is_file()


def test_step_options_without_a_measured_step_are_refused(cli, tmp_path):
    result = cli("validate", "--arch", "h100-sxm", "--measurements", "validation/reference/h200-sxm", "--step-trace",
                 "x.json", "-o", str(tmp_path / "o"))
    assert result.code == 2 and "no measured step of h100-sxm" in result.err


def test_two_measured_steps_in_one_report_are_refused(cli, report, tmp_path):
    shutil.copy(report / "step.json", tmp_path / "a.json")
    shutil.copy(report / "step.json", tmp_path / "b.json")
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                 "-o", str(tmp_path / "o"))
    assert result.code == 2 and "2 measured steps of h100-sxm" in result.err


def test_a_step_device_the_trace_has_not_names_the_option(cli, report, tmp_path):
    trace = tmp_path / "one.json"
    trace.write_text(json.dumps({"schema_version": 1, "kind": "system_trace", "name": "t", "num_devices": 1, "programs": [
        {"name": "p", "devices": [0], "ops": [{"name": "g", "kind": "compute", "duration_s": 1e-6}]}]}))
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(report / "step.json"), "--step-trace",
                 str(trace), "--step-system", "dgx-h100", "--step-device", "5", "-o", str(tmp_path / "o"))
    assert result.code == 2 and result.err == "accelsim: error: --step-device: the trace has no device 5\n"
    assert not (tmp_path / "o").exists()  # refused before any record is predicted or written


def test_a_step_on_another_trace_replays_the_device_it_names(cli, report, tmp_path):
    """``--step-trace`` / ``--step-system`` / ``--step-device``: checked before the records,
    then the step is replayed on that trace (one elementwise record kept: the step is the point)."""
    data = json.loads((report / "step.json").read_text())
    data["records"] = [r for r in data["records"] if r["family"] == "elementwise"][:1]
    step = tmp_path / "step.json"
    step.write_text(json.dumps(data))
    trace = tmp_path / "two.json"
    trace.write_text(json.dumps({"schema_version": 1, "kind": "system_trace", "name": "t", "num_devices": 2, "programs": [
        {"name": "p", "devices": ["0-1"], "ops": [{"name": "g", "kind": "compute", "duration_s": 1e-6}]}]}))
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(step), "--step-trace", str(trace),
                 "--step-system", "dgx-h100", "--step-device", "1", "-o", str(tmp_path / "o"))
    assert result.code == 0, result.err
    assert "wrote" in result.out and "step.perfetto.json" in result.out
    assert "--step-device 1" in (tmp_path / "o" / "step.md").read_text()
