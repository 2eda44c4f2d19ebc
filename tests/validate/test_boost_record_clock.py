"""With ``power.dvfs.boost`` on (``docs/power.md``), a record's locked clock is the clock its
kernel runs at, at most: it is set as the boost clock, so the matrix unit keeps its clock-free
pipe efficiency (not one re-derived from the locked clock)."""

from __future__ import annotations

import json

import pytest

from accelsim.validate.compare import chip_for, read_measurements

ON = ["power.dvfs.boost.enabled=true"]  # h100-sxm's default; said so it holds if that changes
OFF = ["power.dvfs.boost.enabled=false"]
HEADER = {"kind": "measurements", "schema_version": 1, "family": "gemm", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}


@pytest.fixture
def records(tmp_path):
    base = {"family": "gemm", "params": {"M": 2048, "N": 2048, "K": 2048}, "latency_s": 100e-6}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**HEADER, "records": [
        {**base, "id": "free"}, {**base, "id": "locked", "conditions": {"clock": "1500 MHz"}},
        {**base, "id": "read", "sm_clock_mhz": {"median": 1700, "min": 1690, "max": 1710, "readings": 10}}]}))
    return read_measurements([path])


def test_a_locked_clock_under_the_boost_is_the_boost_clock(records):
    free, locked, _ = records
    cache: dict = {}
    on_free, on_locked = chip_for(free, "h100-sxm", ON, cache), chip_for(locked, "h100-sxm", ON, cache)
    assert on_free.clock_hz == pytest.approx(1.98e9)
    assert on_locked.clock_hz == pytest.approx(1.5e9)
    assert on_locked.matrix.efficiency == on_free.matrix.efficiency == pytest.approx(0.96)


def test_without_the_boost_the_lock_sets_the_clock_as_before(records):
    _, locked, _ = records
    chip = chip_for(locked, "h100-sxm", OFF, {})
    assert chip.clock_hz == pytest.approx(1.5e9)
    assert chip.matrix.efficiency == pytest.approx(0.80)


def test_a_boost_clock_on_the_command_line_comes_before_the_read_clock(records):
    """With the boost on `--set clock=` is refused; the clock what-if is the boost clock, and it
    names the clock as `clock` did: the record's read clock no longer applies, its lock still does."""
    free, locked, read = records
    what_if = [*ON, "power.dvfs.boost.clock=1600 MHz"]
    assert chip_for(read, "h100-sxm", ON, {}).clock_hz == pytest.approx(1.7e9)
    assert not read.read_clock_applies(what_if)
    assert chip_for(read, "h100-sxm", what_if, {}).clock_hz == pytest.approx(1.6e9)
    assert chip_for(free, "h100-sxm", what_if, {}).clock_hz == pytest.approx(1.6e9)
    assert chip_for(locked, "h100-sxm", what_if, {}).clock_hz == pytest.approx(1.5e9)
