"""CI (``.ci/run``: ``pip install -e '.[test]' && python -m pytest``) skips no test for a
missing package: every package a test skips without is in the ``test`` extra, Ray
included, so the sweep on a local Ray instance runs on every submission."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO

LOCAL = ("accelsim", "measure_gpu")
"""importorskip targets that are this repository's own modules, not packages to install."""


def _test_extra() -> set[str]:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return {re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0].lower() for requirement in extras["test"]}


def _skipped_without() -> set[str]:
    names = set()
    for path in (REPO / "tests").rglob("*.py"):
        names.update(re.findall(r"importorskip\(\"([A-Za-z0-9_]+)", path.read_text(encoding="utf-8")))
    return {name for name in names if name not in LOCAL}


def test_every_package_a_test_needs_is_in_the_test_extra():
    needed = _skipped_without()
    assert {"ray", "jax", "triton", "torch"} <= needed
    assert needed <= _test_extra()


def test_ci_installs_the_test_extra_and_runs_the_suite():
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test]' && python -m pytest" in run
