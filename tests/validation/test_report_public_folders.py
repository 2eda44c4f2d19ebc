"""validation/report_public.py: by default it reads every chip's folder of the reference set
and never the power readings (``validation/reference/power/``, for ``validate --power``),
which are not kernel times and which the kernel reader refuses."""

from __future__ import annotations

import sys
from pathlib import Path

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation"))

import report_public as rp  # noqa: E402

from accelsim.validate.compare import read_measurements  # noqa: E402


def test_default_folders_are_the_chips_not_the_power_readings():
    folders = [Path(p) for p in rp._kernel_reference_folders()]
    names = {p.name for p in folders}
    assert "power" not in names and {"h100-sxm", "a100-sxm4-80gb", "b200"} <= names
    assert all(any(p.glob("*.json")) for p in folders)


def test_the_default_folders_read_as_kernel_measurements():
    records = read_measurements(rp._kernel_reference_folders())
    assert len(records) > 700 and all(r.arch for r in records)
