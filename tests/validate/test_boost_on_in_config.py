"""A config that turns ``power.dvfs.boost`` on in its file (not by ``--set``) predicts a
clock-locked record as the ``--set`` does: the record's clock is the boost clock, the
conditions are accepted when the records are read, and a fit's chips (``FitChips``) are
the chips ``validate`` uses (``chip_for``)."""

from __future__ import annotations

import json

import pytest

from accelsim.validate.calibrate import FitChips
from accelsim.validate.compare import chip_for, read_measurements


@pytest.fixture
def boosted(write_yaml):
    return str(write_yaml("boosted.yaml", """\
        extends: h100-sxm
        name: boosted
        power:
          dvfs:
            boost:
              enabled: true
        """))


@pytest.fixture
def locked(tmp_path, boosted):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({
        "kind": "measurements", "schema_version": 1, "family": "gemm", "device": {"arch": boosted},
        "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"},
        "records": [{"id": "locked", "family": "gemm", "params": {"M": 2048, "N": 2048, "K": 2048},
                     "latency_s": 1e-4, "conditions": {"clock": "1500 MHz"}}]}))
    (record,) = read_measurements([path])
    return record


def test_a_locked_record_is_read_and_runs_at_its_clock(locked, boosted):
    chip = chip_for(locked, boosted, [], {})
    assert chip.clock_hz == pytest.approx(1.5e9)
    assert chip.matrix.efficiency == pytest.approx(0.96)  # the clock-free pipe efficiency, not rescaled


def test_a_fit_s_chips_are_validate_s(locked, boosted):
    assert FitChips(boosted).chip(locked, {}) == chip_for(locked, boosted, [], {})
