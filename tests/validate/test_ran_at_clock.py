"""A record's ``sm_clock_mhz`` (the SM clock the measurement scripts read while timing it)
sets the clock it is predicted at, unless its conditions or the command name a clock; it
does not split a kernel's configs into separate rankings."""

from __future__ import annotations

import json
import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.report.validation import write_report
from accelsim.validate.calibrate import errors, prepare
from accelsim.validate.compare import compare, config_rankings, read_measurements

HEADER = {"kind": "measurements", "schema_version": 1, "family": "gemm", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}
PARAMS = {"M": 2048, "N": 2048, "K": 2048}  # compute-bound: the SM clock sets its time
CONFIG = {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3, "num_warps": 8}
# The clock as one fixed clock (the boost off): with it on the read clock is the boost clock
# (test_boost_record_clock.py) and `--set clock=` is refused.
OFF = ["power.dvfs.boost.enabled=false"]


def _clock(median, low=None, high=None, readings=12):
    return {"median": median, "min": low or median, "max": high or median, "readings": readings}


def _write(tmp_path, *records):
    path = tmp_path / "m.json"
    base = {"family": "gemm", "params": PARAMS, "config": CONFIG, "latency_s": 100e-6}
    path.write_text(json.dumps({**HEADER, "records": [{**base, **r} for r in records]}))
    return path


def _simulated(overrides, config=CONFIG):
    chip = load_arch("h100-sxm", overrides)
    family = get_family("gemm")
    params = parse_values(family.params, {k: str(v) for k, v in PARAMS.items()}, "test")
    return simulate_kernel(family.build(params, family.resolve_config(params, config, chip), chip), chip).latency_s


def test_a_record_is_predicted_at_the_clock_it_ran_at(tmp_path):
    nominal, read = compare(read_measurements([_write(
        tmp_path, {"id": "a"}, {"id": "b", "sm_clock_mhz": _clock(1000.4, 995.0, 1010.0)})]), overrides=OFF)
    assert read.measurement.ran_at_clock == "clock=1000 MHz"
    assert nominal.predicted_s == pytest.approx(_simulated(OFF))
    assert read.predicted_s == pytest.approx(_simulated([*OFF, "clock=1000 MHz"]))
    assert read.predicted_s > 1.1 * nominal.predicted_s


def test_conditions_and_the_command_line_name_the_clock_first(tmp_path):
    path = _write(tmp_path, {"id": "a", "sm_clock_mhz": _clock(1400), "conditions": {"clock": "1200 MHz"}},
                  {"id": "b", "sm_clock_mhz": _clock(1400)})
    locked, read = compare(read_measurements([path]), overrides=[*OFF, "clock = 1600 MHz"])
    assert locked.predicted_s == pytest.approx(_simulated([*OFF, "clock=1200 MHz"]))
    assert read.predicted_s == pytest.approx(_simulated([*OFF, "clock=1600 MHz"]))


def test_calibration_predicts_at_the_same_clock(tmp_path):
    records = read_measurements([_write(tmp_path, {"id": "b", "sm_clock_mhz": _clock(1400)})])
    (case,) = prepare(records, "h100-sxm")
    (comparison,) = compare(records)
    assert errors([case], "h100-sxm", [])[0] == pytest.approx(
        math.log(comparison.predicted_s / comparison.measurement.latency_s))


def test_clocks_read_apart_do_not_split_a_ranking(tmp_path):
    other = {**CONFIG, "block_n": 64}
    path = _write(tmp_path, {"id": "a", "sm_clock_mhz": _clock(1980)},
                  {"id": "b", "config": other, "sm_clock_mhz": _clock(1965), "latency_s": 120e-6})
    ((_, count, tau),) = config_rankings(compare(read_measurements([path])))
    assert count == 2 and tau in (-1.0, 1.0)


def test_the_report_says_which_clock_it_predicted_at(tmp_path):
    comparisons = compare(read_measurements([_write(tmp_path, {"id": "b", "sm_clock_mhz": _clock(1400)})]))
    report = write_report(comparisons, load_arch("h100-sxm"), tmp_path / "out", "test").read_text()
    assert "(at 1400 MHz, the SM clock read while it was timed)" in report
    report = write_report(compare(read_measurements([tmp_path / "m.json"]), overrides=[*OFF, "clock=1600 MHz"]),
                          load_arch("h100-sxm"), tmp_path / "out2", "test").read_text()
    assert "read while it was timed" not in report


@pytest.mark.parametrize("value, expected", [
    ({"median": 1400}, "expected {median, min, max, readings}"),
    (_clock(1400, 1500, 1600), "min <= median <= max"),
    (_clock(0), "from 1 to"),
    ("1400 MHz", "expected {median, min, max, readings}"),
    ({**_clock(1400), "readings": 0.5}, "whole number of readings"),
    (_clock(0.6), "from 1 to"),
    (_clock(10**400), "from 1 to"),  # a huge integer: no overflow formatting it
])
def test_a_bad_reading_names_the_record(tmp_path, value, expected):
    path = _write(tmp_path, {"id": "a", "sm_clock_mhz": value})
    with pytest.raises(InputError) as info:
        read_measurements([path])
    line = info.value.one_line()
    assert str(path) in line and "records[0].sm_clock_mhz" in line and expected in line and "\n" not in line


def test_huge_integers_are_refused_in_one_line(tmp_path):
    """JSON integers of any size: a check that converts them to float would overflow."""
    for record in ({"id": "a", "sm_clock_mhz": _clock(1500, 1400, 10**400)}, {"id": "a", "latency_s": 10**400},
                   {"id": "a", "flops": 10**400}):
        path = _write(tmp_path, record)
        try:
            read_measurements([path])
        except InputError as exc:
            assert "\n" not in exc.one_line() and str(path) in exc.one_line()


def test_the_report_names_the_read_clock_only_when_it_applied(tmp_path):
    """A record whose conditions set the clock it was also read at is predicted at its
    conditions; the report says that once."""
    path = _write(tmp_path, {"id": "a", "sm_clock_mhz": _clock(1400), "conditions": {"clock": "1400 MHz"}})
    (comparison,) = compare(read_measurements([path]))
    assert not comparison.at_read_clock
    report = write_report([comparison], load_arch("h100-sxm"), tmp_path / "out", "test").read_text()
    assert "(at clock=1400 MHz)" in report and "read while it was timed" not in report
