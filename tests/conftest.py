"""Shared fixtures: running the CLI in-process and writing config files."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from accelsim.cli.main import main

REPO = Path(__file__).resolve().parent.parent

# Property tests draw the same examples on every run (a test that passes once passes in CI),
# and keep no example database between runs.
settings.register_profile("accelsim", derandomize=True, database=None)
settings.load_profile("accelsim")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run ``accelsim ARGS...`` in-process; returns exit code, stdout, stderr."""

    def run(*args: str) -> CliResult:
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def write_yaml(tmp_path):
    """Write a YAML file (dedented) under tmp_path and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write
