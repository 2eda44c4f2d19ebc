"""The README's block on measured runs stays true: its ``import profile`` and ``validate``
commands, run in a scratch folder, print the lines it shows, in order (tests/test_readme.py
runs only the tour's read-only commands; these write files)."""

from __future__ import annotations

import re
import shlex

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _profile_block() -> list[str]:
    (block,) = [b for b in re.findall(r"```\n(.*?)```", README, flags=re.S) if "$ accelsim import profile" in b]
    return block.splitlines()


def test_the_readme_block_prints_what_it_shows(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the outputs are written here; the fixture is read from the repository
    lines, outputs = _profile_block(), ""
    shown = [line for line in lines if not line.startswith("$ ")]
    for line in lines:
        if line.startswith("$ accelsim "):
            argv = [str(REPO / a) if a.startswith("tests/") else a for a in shlex.split(line[2:])[1:]]
            result = cli(*argv)
            assert result.code == 0, result.err
            outputs += result.out
    printed = [" ".join(line.split()) for line in outputs.splitlines()]
    position = 0
    for line in shown:
        assert " ".join(line.split()) in printed[position:], f"the README shows {line!r}; printed:\n{outputs}"
        position = printed.index(" ".join(line.split()), position) + 1
    assert len(lines) <= 6 and (tmp_path / "step-report" / "step.perfetto.json").is_file()
