"""The files a sweep writes at its end are checked before it runs: a name taken by a
folder (or the plots folder's by a file) is one line, exit 2, and nothing runs."""

from __future__ import annotations

import pytest

from tests.study.conftest import HBM_SWEEP


@pytest.mark.parametrize(("name", "make"), [("results.csv", "folder"), ("summary.md", "folder"), ("plots", "file")])
def test_an_output_name_taken_is_refused_before_anything_runs(cli, spec_file, tmp_path, name, make):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).mkdir() if make == "folder" else (out / name).write_text("x")
    result = cli("sweep", str(spec_file(HBM_SWEEP)), "-o", str(out), "--workers", "1", "--quiet")
    assert result.code == 2 and name in result.err and result.err.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == [name]  # no journal: nothing ran
