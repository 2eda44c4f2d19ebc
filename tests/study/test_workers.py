"""Worker processes and Ray give the same table as one process, in the same order."""

from __future__ import annotations

import sys

import pytest

from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep
from tests.study.conftest import HBM_SWEEP


def test_two_processes_match_one(spec_file, tmp_path):
    plan = plan_sweep(spec_file(HBM_SWEEP))
    run_sweep(plan, tmp_path / "one", workers=1, progress=False)
    run_sweep(plan, tmp_path / "two", workers=2, progress=False)
    assert (tmp_path / "two" / "results.csv").read_text() == (tmp_path / "one" / "results.csv").read_text()


@pytest.mark.slow
def test_local_ray_matches_one_process(spec_file, tmp_path):
    pytest.importorskip("ray")
    plan = plan_sweep(spec_file(HBM_SWEEP))
    run_sweep(plan, tmp_path / "one", workers=1, progress=False)
    run_sweep(plan, tmp_path / "ray", ray="local", progress=False)
    assert (tmp_path / "ray" / "results.csv").read_text() == (tmp_path / "one" / "results.csv").read_text()


def test_ray_without_ray_installed_says_what_to_install(cli, spec_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed (the test extra installs it)
    result = cli("sweep", str(spec_file(HBM_SWEEP)), "-o", str(tmp_path / "out"), "--ray", "local", "--quiet")
    assert result.code == 2
    assert result.err == "accelsim: error: --ray: Ray is not installed: pip install -e '.[ray]'\n"
