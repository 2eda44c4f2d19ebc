"""The measurement scripts read the SM clock while a case is timed (NVML, read only) and
keep what they read on its record (``sm_clock_mhz``), which the format checker takes."""

from __future__ import annotations

import itertools
import json
import time

import pytest

import measurement_format as fmt
import provenance
from accelsim.errors import InputError
from accelsim.validate.compare import read_measurements
from provenance import ClockSampler, clock_fields, clock_note, clock_summary


def test_readings_are_taken_while_the_body_runs():
    values = itertools.cycle([1980.0, 1965.0, None])
    sampler = ClockSampler(lambda: next(values), period_s=0.001)
    with sampler.during() as readings:
        time.sleep(0.05)
        assert readings == []  # filled in when the body ends
    assert len(readings) >= 5 and set(readings) <= {1980.0, 1965.0}  # unreadable moments are left out


def test_a_body_shorter_than_one_period_still_gets_a_reading():
    sampler = ClockSampler(lambda: 1755.0, period_s=10.0)
    with sampler.during() as readings:
        pass
    assert readings and set(readings) == {1755.0}


def test_without_a_reader_nothing_is_read():
    with ClockSampler(None).during() as readings:
        pass
    assert readings == [] and clock_summary(readings) is None
    assert clock_fields(None) == {} and clock_note(None) == ""


def test_the_summary_is_the_median_and_range():
    summary = clock_summary([1980.0, 1755.0, 1965.0, 1980.0])
    assert summary == {"median": 1972.5, "min": 1755.0, "max": 1980.0, "readings": 4}
    assert clock_fields(summary) == {"sm_clock_mhz": summary}
    assert "SM clock 1972 MHz" in clock_note(summary) and "1755-1980" in clock_note(summary)


def test_nvml_is_absent_here_and_that_is_no_error(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(provenance.ctypes, "CDLL", missing)
    assert provenance.nvml_sm_clock() is None


def _record(**extra):
    return {"id": "copy-1MiB", "family": "copy", "implementation": "x", "params": {"bytes": 1 << 20},
            "latency_s": 1e-5, "samples_s": [1e-5], "flops": 0, "bytes": 2 << 20, "measured": True,
            "source": "test", "notes": "", **extra}


def test_the_format_checker_takes_a_clock_reading_and_refuses_a_bad_one():
    good = clock_summary([1980.0, 1965.0])
    assert fmt.validate_record(_record(sm_clock_mhz=good), "copy") == []
    for bad in ({"median": 1980}, {**good, "min": 2000.0}, {**good, "readings": 0}, {**good, "median": True}, 1980):
        assert any(e.startswith("sm_clock_mhz:") for e in fmt.validate_record(_record(sm_clock_mhz=bad), "copy")), bad


def test_a_measured_case_keeps_the_clock_read_while_it_was_timed(tmp_path):
    measure_gpu = pytest.importorskip("measure_gpu")  # needs torch
    device = measure_gpu.describe_device("cpu")
    policy = measure_gpu.POLICIES["cpu-quick"]
    run = measure_gpu.Run(device, policy, "cpu-quick", measure_gpu.Timer(device, policy), tmp_path, float("inf"),
                          False, {"source": "test", "date": "today"}, clocks=ClockSampler(lambda: 1755.0))
    p = {"bytes": 2**20}
    record = measure_gpu.measure_case("copy", p, measure_gpu.PREPARE["copy"](p, device), run)
    assert record["sm_clock_mhz"]["median"] == 1755.0 and record["sm_clock_mhz"]["readings"] >= 1
    assert "SM clock 1755 MHz" in record["notes"]
    assert fmt.validate_record(record, "copy") == []


@pytest.mark.parametrize("value", [
    {"median": 1980.0, "min": 1965.0, "max": 1980.0, "readings": 3}, {"median": 1980, "min": 1980, "max": 1980, "readings": 1},
    {"median": 1980}, {"median": 1980.0, "min": 1990.0, "max": 2000.0, "readings": 3},
    {"median": 0, "min": 0, "max": 0, "readings": 1}, {"median": True, "min": 1, "max": 1, "readings": 1}, "1980 MHz",
    {"median": 1500, "min": 1400, "max": 1600, "readings": 10**400},  # a huge integer: no overflow
    {"median": 1500, "min": 1400, "max": 10**400, "readings": 3},
    {"median": 1500, "min": 1400, "max": 1600, "readings": 0.5}, {"median": 0.6, "min": 0.5, "max": 0.7, "readings": 2},
    {"median": 10**400, "min": 1400, "max": 10**400, "readings": 3},
])
def test_the_checker_and_validate_agree_on_a_reading(tmp_path, value):
    record = {**_record(sm_clock_mhz=value), "family": "gemm", "id": "g", "params": {"M": 64, "N": 64, "K": 64, "dtype": "bf16"}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"kind": "measurements", "schema_version": 1, "family": "gemm",
                                "device": {"arch": "h100-sxm"}, "records": [record],
                                "provenance": {"date": None, "command": "t", "versions": {}, "clocks": None, "source": "t"}}))
    checker_refuses = any(e.startswith("sm_clock_mhz:") for e in fmt.validate_record(record, "gemm"))
    try:
        read_measurements([path])
        validate_refuses = False
    except InputError:
        validate_refuses = True
    assert checker_refuses == validate_refuses


class FakeNvml:
    """NVML as ctypes sees it: functions returning 0 for success, filling their out-arguments."""

    def __init__(self, gpus: int, clock: int = 1980) -> None:
        self.gpus, self.clock, self.asked = gpus, clock, []

    def nvmlInit_v2(self):
        return 0

    def nvmlDeviceGetCount_v2(self, count):
        count._obj.value = self.gpus
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index, handle):
        self.asked.append(("index", index))
        return 0

    def nvmlDeviceGetHandleByPciBusId_v2(self, bus_id, handle):
        self.asked.append(("bus", bus_id))
        return 0 if bus_id == b"0000:3B:00.0" else 1

    def nvmlDeviceGetClockInfo(self, handle, kind, clock):
        assert kind == provenance.NVML_CLOCK_SM
        clock._obj.value = self.clock
        return 0


@pytest.mark.parametrize("gpus, bus_id, reads", [
    (1, None, True),  # the only GPU
    (8, None, False),  # several and no bus id: NVML's numbering is not CUDA's, so no guess
    (8, "0000:3B:00.0", True),  # the timed GPU by its PCI address
    (8, "0000:AA:00.0", False),  # not found
])
def test_nvml_reads_the_timed_gpu_or_none(monkeypatch, gpus, bus_id, reads):
    nvml = FakeNvml(gpus)
    monkeypatch.setattr(provenance.ctypes, "CDLL", lambda name: nvml)
    reader = provenance.nvml_sm_clock(bus_id)
    assert (reader is not None) == reads
    if reads:
        assert reader() == 1980.0
        assert nvml.asked == ([("bus", bus_id.encode())] if bus_id else [("index", 0)])
