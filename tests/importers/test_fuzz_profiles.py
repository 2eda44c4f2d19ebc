"""Fuzzing ``accelsim import profile``: mutations of a PyTorch profiler trace, a JAX profiler
trace and an Nsight Systems export are refused in one line, or imported into a measured step
whose times and records a measurement file may hold; broken gzip is refused likewise."""

from __future__ import annotations

import gzip
import json
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from accelsim.units import is_measured_time
from tests.fuzzing import AWKWARD, fuzz_settings, mutated, refused_or_ok
from tests.importers.profile_fixtures import JAX_CPU, KINETO_H100, TORCH_CPU, nsys_sqlite

KINETO = json.loads(KINETO_H100.read_text())
JAX = json.loads(gzip.decompress(JAX_CPU.read_bytes()))
TORCH = json.loads(TORCH_CPU.read_text())


def _imports(cli, tmp_path, source, *extra) -> None:
    """Refused in one line with nothing written, or a step whose every time and record is in bounds."""
    out = tmp_path / "step.json"
    out.unlink(missing_ok=True)  # the folder is the test's, shared by its examples
    if refused_or_ok(cli("import", "profile", str(source), *extra, "-o", str(out))):
        step = json.loads(out.read_text())
        assert all(0 <= k["duration_s"] <= 86400 and k["start_s"] >= 0 for k in step["kernels"])
        assert all(is_measured_time(r["latency_s"]) for r in step["records"])
        assert sum(u["share"] for u in step["unmapped"]) <= 1 + 1e-9
    else:
        assert not out.exists()


@fuzz_settings(examples=20)
@given(doc=mutated(KINETO))
def test_mutated_pytorch_gpu_traces(cli, tmp_path, doc):
    source = tmp_path / "trace.json"
    source.write_text(json.dumps(doc))
    _imports(cli, tmp_path, source, "--arch", "h100-sxm")


@fuzz_settings(examples=10)
@given(doc=mutated(TORCH))
def test_mutated_pytorch_cpu_traces(cli, tmp_path, doc):
    source = tmp_path / "trace.json"
    source.write_text(json.dumps(doc))
    _imports(cli, tmp_path, source)


@fuzz_settings(examples=10)
@given(doc=mutated(JAX))
def test_mutated_jax_traces(cli, tmp_path, doc):
    source = tmp_path / "trace.json.gz"
    source.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    _imports(cli, tmp_path, source)


NSYS_CELLS = [("CUPTI_ACTIVITY_KIND_KERNEL", column) for column in
              ("start", "end", "deviceId", "streamId", "correlationId", "demangledName", "gridX", "blockZ")] + \
             [("StringIds", "value"), ("NVTX_EVENTS", "text"), ("NVTX_EVENTS", "start"), ("TARGET_INFO_GPU", "name"),
              ("TARGET_INFO_GPU", "smCount"), ("CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId")]


@fuzz_settings(examples=20)
@given(edits=st.lists(st.tuples(st.sampled_from(NSYS_CELLS), st.integers(1, 12), AWKWARD), min_size=1, max_size=3))
def test_mutated_nsys_exports(cli, tmp_path, edits):
    db = tmp_path / "nsys_h100_tp2_block.sqlite"
    db.unlink(missing_ok=True)
    nsys_sqlite(tmp_path)
    with sqlite3.connect(db) as con:
        for (table, column), row, value in edits:
            value = json.dumps(value) if isinstance(value, list | dict) else value
            if isinstance(value, int) and not -2**63 <= value < 2**63:
                value = str(value)  # SQLite's integers are 64-bit: a larger one is stored as text
            con.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (value, row))
    _imports(cli, tmp_path, db)


def test_gzip_cut_short_or_damaged_is_refused(cli, tmp_path):
    packed = JAX_CPU.read_bytes()
    for name, data in (("cut.json.gz", packed[: len(packed) // 2]), ("bad.json.gz", packed[:20] + b"\0" * 40)):
        source = tmp_path / name
        source.write_bytes(data)
        result = cli("import", "profile", str(source), "-o", str(tmp_path / "o.json"))
        assert result.code == 2 and "gzip" in result.err and len(result.err.splitlines()) == 1


def test_a_gzip_that_unpacks_past_the_limit_is_refused_while_unpacking(cli, tmp_path, monkeypatch):
    from accelsim.importers import profile_events

    monkeypatch.setattr(profile_events, "MAX_INPUT_BYTES", 2**20)
    source = tmp_path / "bomb.json.gz"
    source.write_bytes(gzip.compress(b" " * (2**20 + 10)))
    result = cli("import", "profile", str(source), "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "unpacks to more than" in result.err


def test_a_trace_of_too_many_events_is_refused_before_reading_them(cli, tmp_path, monkeypatch):
    from accelsim.importers import profile_chrome

    monkeypatch.setattr(profile_chrome, "MAX_EVENTS", 10)
    result = cli("import", "profile", str(KINETO_H100), "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "at most 10 are read" in result.err
