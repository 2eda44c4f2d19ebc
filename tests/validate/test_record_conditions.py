"""A record's ``conditions`` (how the device ran where its config says otherwise, e.g. a
locked SM clock) are applied to its chip last, in validate and calibrate alike; a path or
value the config refuses fails in one line naming the record's file and field."""

from __future__ import annotations

import json
import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.validate.calibrate import Evaluator, errors, prepare
from accelsim.validate.compare import compare, read_measurements

HEADER = {"kind": "measurements", "schema_version": 1, "family": "gemm", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}
PARAMS = {"M": 2048, "N": 2048, "K": 2048}  # compute-bound: the SM clock sets its time
CONFIG = {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3, "num_warps": 8}
# A lock as one fixed clock (the boost off): with it on a lock is the boost clock
# (test_boost_record_clock.py) and `--set clock=` is refused.
OFF = ["power.dvfs.boost.enabled=false"]


def _write(tmp_path, **extra):
    base = {"family": "gemm", "params": PARAMS, "config": CONFIG, "latency_s": 100e-6}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**HEADER, "records": [
        {**base, "id": "boost"}, {**base, "id": "locked", "conditions": {"clock": "1200 MHz"}, **extra}]}))
    return path


def _simulated(overrides):
    chip = load_arch("h100-sxm", overrides)
    family = get_family("gemm")
    params = parse_values(family.params, {k: str(v) for k, v in PARAMS.items()}, "test")
    return simulate_kernel(family.build(params, family.resolve_config(params, CONFIG, chip), chip), chip).latency_s


def test_a_locked_clock_is_predicted_at_that_clock(tmp_path):
    boost, locked = compare(read_measurements([_write(tmp_path)]), overrides=OFF)
    assert locked.measurement.conditions == ("clock=1200 MHz",)
    assert boost.predicted_s == pytest.approx(_simulated(OFF))
    assert locked.predicted_s == pytest.approx(_simulated([*OFF, "clock=1200 MHz"]))
    assert locked.predicted_s > 1.1 * boost.predicted_s  # 1.83 GHz -> 1.2 GHz: the SMs set much of its time


def test_conditions_come_after_the_command_line(tmp_path):
    _, locked = compare(read_measurements([_write(tmp_path)]), overrides=[*OFF, "clock=1500 MHz"])
    assert locked.predicted_s == pytest.approx(_simulated([*OFF, "clock=1200 MHz"]))


@pytest.mark.parametrize("jobs", [1, 2])
def test_calibration_sees_the_same_predictions(tmp_path, jobs):
    records = read_measurements([_write(tmp_path)])
    cases = prepare(records, "h100-sxm")
    by_id = {c.measurement.id: c for c in compare(records)}
    expected = [math.log(by_id[c.measurement.id].predicted_s / c.measurement.latency_s) for c in cases]
    assert errors(cases, "h100-sxm", []) == pytest.approx(expected)
    evaluate = Evaluator(cases, "h100-sxm", jobs)
    try:
        assert evaluate(cases, {}) == pytest.approx(expected)
    finally:
        evaluate.close()


@pytest.mark.parametrize("conditions, expected", [
    ({"clock": "fast"}, "clock"),
    ({"no_such.path": "1"}, "no_such"),
    ([["clock", "1 GHz"]], "expected an object of config paths and values"),
    ({}, "expected an object of config paths and values"),
    ({"clock": True}, "expected an object of config paths and values"),
])
def test_bad_conditions_name_the_record(tmp_path, conditions, expected):
    path = _write(tmp_path, conditions=conditions)
    with pytest.raises(InputError) as info:
        read_measurements([path])
    line = info.value.one_line()
    assert str(path) in line and "records[1].conditions" in line and expected in line and "\n" not in line


def test_the_cli_refuses_them_with_exit_2(tmp_path, cli):
    path = _write(tmp_path, conditions={"clock": "fast"})
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "out"))
    assert result.code == 2 and "records[1].conditions" in result.err and not (tmp_path / "out").exists()


def test_the_report_shows_them(tmp_path, cli):
    path = _write(tmp_path)
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    lines = (tmp_path / "out" / "report.md").read_text().splitlines()
    every = lines[lines.index("## Every record"):]
    (locked,) = [line for line in every if line.startswith("| locked |")]
    (boost,) = [line for line in every if line.startswith("| boost |")]
    assert "(at clock=1200 MHz)" in locked and "(at" not in boost


def test_conditions_the_command_line_contradicts_fail_as_the_records(tmp_path, cli):
    """A record's clock with a --set the chip then refuses (a per-program limit above the
    shared memory) was listed as a refused config, or failed naming the config file only."""
    path = _write(tmp_path)
    data = json.loads(path.read_text())
    data["records"][1]["conditions"] = {"local_memory.max_per_program": "228 KiB"}
    path.write_text(json.dumps(data))
    stream = tmp_path / "stream.json"  # calibrate fits on microbenchmark-level records only
    stream.write_text(json.dumps({**data, "family": "elementwise", "records": [
        {"id": r["id"], "family": "elementwise", "params": {"elements": 2**24, "dtype": "fp32"},
         "latency_s": r["latency_s"], **({"conditions": r["conditions"]} if "conditions" in r else {})}
        for r in data["records"]]}))
    out = tmp_path / "out"
    for command, measured in ((("validate", "-o", str(out)), path),
                              (("calibrate", "--fit", "launch_overhead", "-o", str(tmp_path / "fit.yaml")), stream)):
        result = cli(*command, "--arch", "h100-sxm", "--set", "local_memory.capacity=227.5 KiB",
                     "--measurements", str(measured))
        assert result.code == 2, (command, result.out)
        assert str(measured) in result.err and "record 'locked': conditions" in result.err
        assert "\n" not in result.err.strip()
    assert not out.exists() and not (tmp_path / "fit.yaml").exists()

