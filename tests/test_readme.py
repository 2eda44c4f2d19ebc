"""The README's tour stays true: every ``$ accelsim ...`` command it shows that only reads
(``simulate``, ``replay``, ``arch``) and the ``accelsim demo`` table are run, and each
output line the README prints must appear in what the command prints now, in order.
Lines of the simulator's own wall time (``simulated in``, the demo's last column) and
``...`` (abridged) are not compared; nor are commands that write into the repository
(``capture``, ``calibrate``, ``validate``, ``sweep``) or read what such a command wrote;
their own tests cover them."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
READ_ONLY = ("simulate", "replay", "arch")


def _blocks() -> list[list[str]]:
    return [block.splitlines() for block in re.findall(r"```\n(.*?)```", README, flags=re.S)]


def _examples() -> list[tuple[list[str], list[str]]]:
    """(argv, expected output lines) of every read-only ``$ accelsim`` command shown."""
    examples: list[tuple[list[str], list[str]]] = []
    for lines in _blocks():
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ accelsim "):
                i += 1
                continue
            command = lines[i][2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
            i += 1
            expected = []
            while i < len(lines) and not lines[i].startswith("$ "):
                expected.append(lines[i])
                i += 1
            argv = shlex.split(command)[1:]
            inputs = [arg for previous, arg in zip(["", *argv[:-1]], argv, strict=True)
                      if arg.endswith(".json") and previous != "--timeline"]
            if argv[0] in READ_ONLY and all((REPO / arg).is_file() for arg in inputs):  # not a capture's output
                examples.append((argv, expected))
    return examples


def _comparable(lines: list[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines
            if line.strip() and line.strip() != "..." and not line.startswith("simulated in")]


def _assert_in_order(expected: list[str], output: str) -> None:
    got = [" ".join(line.split()) for line in output.splitlines()]
    position = 0
    for line in expected:
        try:
            position = got.index(line, position) + 1
        except ValueError:
            pytest.fail(f"the README shows {line!r}, the command now prints:\n{output}")


EXAMPLES = _examples()


def test_the_tour_shows_read_only_commands():
    assert {argv[0] for argv, _ in EXAMPLES} == set(READ_ONLY) and len(EXAMPLES) >= 6


@pytest.mark.parametrize("argv, expected", EXAMPLES, ids=[" ".join(a[:4]) for a, _ in EXAMPLES])
def test_a_readme_command_prints_what_the_readme_shows(cli, tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(REPO)  # the README's paths are relative to the repository
    argv = [str(tmp_path / "out.json") if previous == "--timeline" else arg
            for previous, arg in zip(["", *argv[:-1]], argv, strict=True)]
    result = cli(*argv)
    shown_error = any(line.startswith("accelsim: error:") for line in expected)
    assert result.code == (2 if shown_error else 0), result.err
    _assert_in_order(_comparable(expected), result.err if shown_error else result.out)


def test_the_demo_table_is_what_the_readme_shows(cli, tmp_path):
    (block,) = [lines for lines in _blocks() if lines and lines[0].startswith("CHIP ")]
    rows = [line for line in block if re.match(r"(h100-sxm|tpu-v5e|dgx-h100) ", line)]
    assert len(rows) >= 10
    result = cli("demo", "--out", str(tmp_path / "demo"))
    assert result.code == 0, result.err
    without_wall_time = [re.sub(r"\s+\S+ ms$", "", " ".join(row.split())) for row in rows]
    printed = [re.sub(r"\s+\S+ ms$", "", " ".join(line.split())) for line in result.out.splitlines()]
    for row in without_wall_time:
        assert row in printed, f"the README's demo row {row!r} is not in:\n{result.out}"
