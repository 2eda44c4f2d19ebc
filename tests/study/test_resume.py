"""A stopped sweep resumes from its journal: nothing lost, nothing run twice."""

from __future__ import annotations

import json

import pytest

from accelsim.errors import InputError
from accelsim.study import journal as journal_module
from accelsim.study.journal import JOURNAL_NAME
from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep
from tests.study.conftest import HBM_SWEEP


def test_resume_runs_only_what_the_journal_lacks(spec_file, tmp_path):
    plan = plan_sweep(spec_file(HBM_SWEEP))
    full = run_sweep(plan, tmp_path / "full", progress=False)
    assert (full.ran, full.resumed) == (6, 0)
    journal = (tmp_path / "full" / JOURNAL_NAME).read_text().splitlines()

    # as if killed after three results, in the middle of writing the fourth
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    (stopped / JOURNAL_NAME).write_text("\n".join(journal[:4]) + "\n" + journal[4][: len(journal[4]) // 2])
    resumed = run_sweep(plan, stopped, progress=False)
    assert (resumed.ran, resumed.resumed) == (3, 3)
    assert (stopped / "results.csv").read_text() == (tmp_path / "full" / "results.csv").read_text()
    lines = (stopped / JOURNAL_NAME).read_text().splitlines()
    assert len(lines) == 7  # header + 6 results, the cut line gone

    again = run_sweep(plan, stopped, progress=False)
    assert (again.ran, again.resumed) == (0, 6)


def test_journal_of_another_spec_is_refused(spec_file, tmp_path):
    run_sweep(plan_sweep(spec_file(HBM_SWEEP)), tmp_path / "out", progress=False)
    other = plan_sweep(spec_file(HBM_SWEEP.replace('"8 TB/s"', '"4 TB/s"'), "other.yaml"))
    with pytest.raises(InputError, match="different sweep spec"):
        run_sweep(other, tmp_path / "out", progress=False)
    fresh = run_sweep(other, tmp_path / "out", progress=False, fresh=True)
    assert fresh.ran == 6


def test_cli_resumes_and_fresh_starts_over(cli, spec_file, tmp_path):
    spec, out = str(spec_file(HBM_SWEEP)), str(tmp_path / "out")
    first = cli("sweep", spec, "-o", out, "--workers", "1", "--quiet")
    assert first.code == 0 and first.out.startswith("6 runs (6 run now; 0 failed)")
    again = cli("sweep", spec, "-o", out, "--workers", "1", "--quiet")
    assert again.out.startswith("6 runs (0 run now, 6 from the journal; 0 failed)")
    fresh = cli("sweep", spec, "-o", out, "--workers", "1", "--quiet", "--fresh")
    assert fresh.out.startswith("6 runs (6 run now; 0 failed)")


def test_journal_over_a_changed_trace_is_refused(spec_file, tmp_path):
    """The journal names the files the spec reads: a regenerated system trace makes the
    folder's results another sweep's, not silently stale ones."""
    from tests import conftest

    trace = tmp_path / "step.json"
    trace.write_bytes((conftest.REPO / "traces" / "system" / "transformer_step_dp2_tp4.json").read_bytes())
    spec = spec_file(f"""\
        base: dgx-h100
        parameters:
          chip.interconnect.bandwidth_per_link: {{values: ["25 GB/s", "50 GB/s"]}}
        workloads:
          - {{system_trace: {trace}}}
        metrics: [latency_s]
        """)
    first = run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)
    assert first.ran == 2
    again = run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)
    assert (again.ran, again.resumed) == (0, 2)
    trace.write_text(trace.read_text().replace('"name"', '"name" ', 1))  # same trace, other bytes
    with pytest.raises(InputError, match="changed since"):
        run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)
    assert run_sweep(plan_sweep(spec), tmp_path / "out", progress=False, fresh=True).ran == 2


def test_journal_over_a_changed_kernel_trace_of_a_system_trace_is_refused(spec_file, tmp_path):
    """A kernel trace a system trace's compute op names is read too: changing it makes the
    folder's results stale, so the journal is refused."""
    from tests import conftest

    kernel = tmp_path / "k.json"
    kernel.write_bytes((conftest.REPO / "traces" / "triton" / "matmul_512.json").read_bytes())
    (tmp_path / "step.json").write_text(json.dumps({
        "schema_version": 1, "num_devices": 8,
        "programs": [{"name": "spmd", "devices": ["0-7"], "ops": [{"name": "k", "kind": "compute", "kernel_trace": "k.json"}]}]}))
    spec = spec_file(f"""\
        base: dgx-h100
        parameters:
          chip.hbm.bandwidth: {{values: ["2 TB/s", "3 TB/s"]}}
        workloads:
          - {{system_trace: {tmp_path / "step.json"}}}
        metrics: [latency_s]
        """)
    assert run_sweep(plan_sweep(spec), tmp_path / "out", progress=False).ran == 2
    kernel.write_text(kernel.read_text().replace('"name"', '"name" ', 1))  # same kernel, other bytes
    with pytest.raises(InputError, match="changed since"):
        run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)


def test_journal_over_a_changed_config_a_base_extends_is_refused(spec_file, tmp_path):
    """Every config file a base is built from is read: a file base's parent changing makes
    the folder's results stale, so the journal is refused."""
    (tmp_path / "parent.yaml").write_text("extends: h100-sxm\nname: parent\n")
    (tmp_path / "child.yaml").write_text("extends: parent.yaml\nname: child\n")
    spec = spec_file(HBM_SWEEP.replace("base: h100-sxm", f"base: {tmp_path / 'child.yaml'}"))
    assert run_sweep(plan_sweep(spec), tmp_path / "out", progress=False).ran == 6
    (tmp_path / "parent.yaml").write_text("extends: h100-sxm\nname: parent\nlaunch_overhead: 9 us\n")
    with pytest.raises(InputError, match="changed since"):
        run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)


@pytest.mark.parametrize("line", ['{"point": "x"}', "[1, 2]", '{"point": 0, "workload": 0, "status": "ok", "metrics": "x"}'])
def test_a_damaged_journal_line_is_refused_by_line(spec_file, tmp_path, line):
    plan = plan_sweep(spec_file(HBM_SWEEP))
    run_sweep(plan, tmp_path / "out", progress=False)
    journal = tmp_path / "out" / JOURNAL_NAME
    journal.write_text(journal.read_text() + line + "\n")
    with pytest.raises(InputError, match="not a journal row") as info:
        run_sweep(plan, tmp_path / "out", progress=False)
    assert info.value.source == str(journal) and info.value.line == 8


def test_a_damaged_line_before_the_last_is_refused_not_skipped(spec_file, tmp_path):
    plan = plan_sweep(spec_file(HBM_SWEEP))
    run_sweep(plan, tmp_path / "out", progress=False)
    journal = tmp_path / "out" / JOURNAL_NAME
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "{garbage", *lines[1:]]) + "\n")
    with pytest.raises(InputError, match="not a journal row") as info:
        run_sweep(plan, tmp_path / "out", progress=False)
    assert info.value.line == 2


def test_a_journal_that_is_not_text_or_not_a_file_is_refused(spec_file, tmp_path):
    plan = plan_sweep(spec_file(HBM_SWEEP))
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / JOURNAL_NAME).write_bytes(b"\xff\xfe\n")
    with pytest.raises(InputError, match="cannot read the sweep's journal"):
        run_sweep(plan, tmp_path / "binary", progress=False)
    (tmp_path / "folder" / JOURNAL_NAME).mkdir(parents=True)
    with pytest.raises(InputError, match="expected the sweep's journal file here"):
        run_sweep(plan, tmp_path / "folder", progress=False)


def test_a_row_for_a_point_the_sweep_does_not_have_is_refused(spec_file, tmp_path):
    plan = plan_sweep(spec_file(HBM_SWEEP))
    run_sweep(plan, tmp_path / "out", progress=False)
    journal = tmp_path / "out" / JOURNAL_NAME
    journal.write_text(journal.read_text() + '{"point":99,"workload":0,"status":"ok","error":null,"metrics":{}}\n')
    with pytest.raises(InputError, match="row for point 99, workload 0, which this sweep does not have"):
        run_sweep(plan, tmp_path / "out", progress=False)


@pytest.mark.parametrize("name, value, expected", [
    ("latency_s", '"abc"', "metric 'latency_s' is \"abc\", expected a number"),
    ("shared_cache_hit_rate", "true", "metric 'shared_cache_hit_rate' is true, expected a number"),
    ("bound", "5", "metric 'bound' is 5, expected text"),
    ("fits", '"yes"', "metric 'fits' is \"yes\", expected true or false"),
])
def test_a_metric_of_the_wrong_type_is_refused_by_line(spec_file, tmp_path, name, value, expected):
    """Every metric a run writes resumes (text, true/false, numbers, a TPU's null hit rate);
    one edited to another type is refused, not carried into results.csv."""
    plan = plan_sweep(spec_file("""\
        base: tpu-v5e-4x4
        workloads:
          - {kernel: copy, params: {bytes: 1048576}}
          - {collective: all-gather, bytes: 1 MiB}
          - sequence: [{kernel: copy, params: {bytes: 1048576}}, {collective: all-reduce, bytes: 1 MiB}]
            memory: [{bytes: 1 GB}]
        """))
    run_sweep(plan, tmp_path / "out", progress=False)
    assert run_sweep(plan, tmp_path / "out", progress=False).resumed == 3
    journal = tmp_path / "out" / JOURNAL_NAME
    lines = journal.read_text().splitlines()
    number = next(n for n, line in enumerate(lines[1:], start=2) if f'"{name}":' in line)
    item = json.loads(lines[number - 1])
    item["metrics"][name] = json.loads(value)
    lines[number - 1] = json.dumps(item)
    journal.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as info:
        run_sweep(plan, tmp_path / "out", progress=False)
    assert (info.value.source, info.value.line) == (str(journal), number)
    assert info.value.message.startswith(expected + "; the journal was edited or damaged")


def test_the_same_sweep_named_another_way_resumes(spec_file, tmp_path, monkeypatch):
    """The journal's digest hashed file paths: the spec named relative or absolute (or
    accelsim installed elsewhere) was 'a different sweep spec'."""
    import shutil
    from pathlib import Path

    shutil.copy(Path(__file__).resolve().parents[2] / "traces" / "triton" / "matmul_512.json", tmp_path / "mm.json")
    spec = spec_file(HBM_SWEEP.replace("workloads:\n", "workloads:\n  - trace: mm.json\n"))
    first = run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)
    monkeypatch.chdir(spec.parent)
    again = run_sweep(plan_sweep(spec.name), tmp_path / "out", progress=False)
    assert first.ran == 9 and (again.ran, again.resumed) == (0, 9)


@pytest.mark.parametrize("model", ["0" * 64, None])
def test_journal_of_another_model_is_refused(spec_file, tmp_path, model):
    """Results one version of accelsim gave are not resumed by another (the header holds a
    hash of its code); a journal written before the header held one is refused alike."""
    plan = plan_sweep(spec_file(HBM_SWEEP))
    run_sweep(plan, tmp_path / "out", progress=False)
    path = tmp_path / "out" / JOURNAL_NAME
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["model_sha256"] == journal_module.model_digest()
    header["model_sha256"] = model
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(InputError, match="another version of accelsim"):
        run_sweep(plan, tmp_path / "out", progress=False)
    assert run_sweep(plan, tmp_path / "out", progress=False, fresh=True).ran == 6


def test_the_model_digest_follows_the_code(monkeypatch, tmp_path):
    package = tmp_path / "accelsim" / "study"
    package.mkdir(parents=True)
    (package / "journal.py").write_text("x = 1\n")
    monkeypatch.setattr(journal_module, "__file__", str(package / "journal.py"))
    journal_module.model_digest.cache_clear()
    try:
        first = journal_module.model_digest()
        journal_module.model_digest.cache_clear()
        (package / "journal.py").write_text("x = 2\n")
        assert journal_module.model_digest() != first
    finally:
        monkeypatch.undo()
        journal_module.model_digest.cache_clear()
