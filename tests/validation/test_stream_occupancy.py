"""The gpu-stream occupancy sweeps (``validation/stream_occupancy/``): valid, sourced
measurement files that rebuild from their transcribed tables, with the launch that ran as
each record's config, and that the simulator reads and runs as written."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import measurement_format as fmt
from accelsim.arch.model import load_arch
from accelsim.validate.compare import predict, read_measurements

HERE = Path(__file__).resolve().parents[2] / "validation" / "stream_occupancy"
FILES = sorted(HERE.glob("*/elementwise.json"))


def _builder():
    spec = importlib.util.spec_from_file_location("build_stream_occupancy", HERE / "build_stream_occupancy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rebuilding_reproduces_the_committed_files(tmp_path):
    assert _builder().main(["--out", str(tmp_path)]) == 0
    rebuilt = sorted(p.relative_to(tmp_path) for p in tmp_path.glob("*/*.json"))
    assert rebuilt == [p.relative_to(HERE) for p in FILES] and len(rebuilt) == 2
    for relative in rebuilt:
        assert json.loads((tmp_path / relative).read_text()) == json.loads((HERE / relative).read_text())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_files_are_valid_and_sourced(path):
    data = json.loads(path.read_text())
    assert fmt.validate_measurement_file(data) == []
    tables = json.loads((HERE / "gpu_stream_tables.json").read_text())["devices"][data["device"]["arch"]]
    assert len(data["records"]) == 4 * len(tables["rows"]) == 128
    for record in data["records"]:
        assert record["source"] == tables["source"] and "@" in record["source"]
        assert record["config"]["num_warps"] * 32 == record["config"]["block_elements"]
        assert "latency_s derived from" in record["notes"]


def test_the_full_occupancy_rows_are_the_reference_records():
    """The 1024-thread rows are the four records of validation/reference/ (same file, the
    commit the reference cites has the same last row)."""
    reference = {r.implementation: r.latency_s for r in read_measurements([HERE.parent / "reference" / "h200-sxm"])
                 if r.family == "elementwise"}
    sweep = {r.implementation: r.latency_s for r in read_measurements([HERE / "h200-sxm"]) if r.id.endswith("-t1024")}
    assert sweep == pytest.approx(reference, rel=1e-9)


def test_a_record_runs_with_two_programs_per_sm():
    record = next(r for r in read_measurements([HERE / "a100-sxm4-40gb"]) if r.id.endswith("-read-t256"))
    comparison = predict(record, load_arch("a100-sxm4-40gb"))
    assert comparison.config["local_memory_bytes"] == 80 * 1024 and comparison.predicted_s > 0
