"""The validation scripts are not a package: make ``validation/`` and ``validation/reference/``
importable for these tests."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VALIDATION = REPO / "validation"

for folder in (VALIDATION, VALIDATION / "reference"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def run_script():
    """Run ``validation/<script>`` with args in a fresh interpreter (as the GPU machine runs it);
    returns the decoded ``*.json`` files under ``out`` (by path relative to it, without the
    suffix) and the standard output."""

    def run(script: str, out: Path, *args: str, env: dict | None = None) -> tuple[dict, str]:
        done = subprocess.run([sys.executable, str(VALIDATION / script), *args, "--out", str(out)], capture_output=True,
                              text=True, timeout=300, env=dict(os.environ, **(env or {})))
        assert done.returncode == 0, done.stderr
        files = {str(p.relative_to(out).with_suffix("")): json.loads(p.read_text(encoding="utf-8"))
                 for p in out.rglob("*.json")}
        return files, done.stdout

    return run
