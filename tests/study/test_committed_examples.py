"""A worked study's documented command writes the committed outputs again, byte for byte
(results.csv, summary.md and every plot); the journal, which holds wall times and the
model's hash, is not committed."""

from __future__ import annotations

import subprocess

from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep
from tests.conftest import REPO

STUDY = REPO / "examples" / "ici_allgather"


def _outputs(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "journal.jsonl")


def test_rerunning_a_study_leaves_its_committed_outputs_unchanged(tmp_path):
    out = tmp_path / "results"
    run_sweep(plan_sweep(STUDY / "sweep.yaml"), out, progress=False)
    assert _outputs(out) == _outputs(STUDY / "results")
    for name in _outputs(out):
        assert (out / name).read_bytes() == (STUDY / "results" / name).read_bytes(), name


def test_no_study_commits_its_journal():
    tracked = subprocess.run(["git", "ls-files", "examples"], cwd=REPO, capture_output=True, text=True, check=True)
    assert tracked.stdout.strip() and "journal.jsonl" not in tracked.stdout
