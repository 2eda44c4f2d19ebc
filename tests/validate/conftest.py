"""Shared fixtures of the validation tests."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report_collectives():
    """``validation/report_collectives.py`` as a module (it is a script, not in the package)."""
    spec = importlib.util.spec_from_file_location("report_collectives", ROOT / "validation" / "report_collectives.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
