"""Measured times no device can take are refused with one line, not reported as an
error of +inf% (``latency_s: 5e-324``) or a bandwidth of inf GB/s
(``time_out_of_place_us: 1e-300``): at least a nanosecond, about a clock cycle, and at
most a day."""

import json
from pathlib import Path

import pytest

from accelsim.errors import InputError
from accelsim.validate.collectives import load_measurements, read_collective_records
from accelsim.validate.compare import read_measurements

ROOT = Path(__file__).resolve().parents[2]
GEMM_RECORDS = ROOT / "validation" / "reference" / "h100-sxm" / "gemm.json"


def _kernel_file(tmp_path, **record) -> Path:
    data = json.loads(GEMM_RECORDS.read_text())
    data["records"] = [{**data["records"][0], **record}]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("latency", [5e-324, 1e-300, 9.9e-10, 0, 86401])
def test_a_latency_no_device_takes(tmp_path, latency):
    with pytest.raises(InputError) as exc:
        read_measurements([_kernel_file(tmp_path, latency_s=latency)])
    assert exc.value.field == "records[0].latency_s"
    assert exc.value.message.startswith("expected a latency in seconds, at least 1e-09 s (a nanosecond, about a "
                                        "clock cycle) and at most 86400 s (a day), got ")


def test_a_nanosecond_is_the_floor(tmp_path):
    assert read_measurements([_kernel_file(tmp_path, latency_s=1e-9)])[0].latency_s == 1e-9


def test_a_kernel_device_time_no_device_takes(tmp_path):
    with pytest.raises(InputError) as exc:
        read_measurements([_kernel_file(tmp_path, kernel_device_s=[{"name": "k", "device_s": 1e-300}])])
    assert exc.value.field == "records[0].kernel_device_s" and "at least 1e-09 s" in exc.value.message


def _collectives_file(tmp_path, **record) -> Path:
    base = {"id": "r", "system": "dgx-h100", "collective": "all-reduce", "ranks": 8, "size_bytes": 1048576,
            "time_out_of_place_us": 30.0, "time_in_place_us": 31.0}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"records": [{**base, **record}]}))
    return path


@pytest.mark.parametrize("record, field", [
    ({"time_out_of_place_us": 1e-300}, "records[0].time_out_of_place_us"),
    ({"time_in_place_us": 5e-324}, "records[0].time_in_place_us"),
    ({"time_in_place_us": 1e12}, "records[0].time_in_place_us"),
])
def test_a_collective_time_no_device_takes(tmp_path, record, field):
    with pytest.raises(InputError) as exc:
        load_measurements(_collectives_file(tmp_path, **record))
    assert exc.value.field == field and "at least 1e-09 s" in exc.value.message and exc.value.message.endswith(" us")


def test_a_bus_bandwidth_that_gives_no_time(tmp_path):
    path = _collectives_file(tmp_path, time_out_of_place_us=None, busbw_GBps=1e250)
    data = json.loads(path.read_text())
    del data["records"][0]["time_out_of_place_us"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as exc:
        load_measurements(path)
    assert exc.value.field == "records[0].busbw_GBps" and "gives a time of 1.84e-253 s" in exc.value.message


def test_a_collective_measurement_files_latency(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"kind": "measurements", "family": "collective", "device": {"arch": "h100-sxm"},
                                "records": [{"id": "a", "params": {"collective": "all-reduce", "ranks": 8,
                                                                   "bytes": 1024}, "latency_s": 1e-300}]}))
    with pytest.raises(InputError) as exc:
        read_collective_records([path], "dgx-h100", "h100-sxm")
    assert exc.value.field == "records[0].latency_s" and "at least 1e-09 s" in exc.value.message


def test_a_collective_size_below_a_byte(tmp_path):
    with pytest.raises(InputError) as exc:
        load_measurements(_collectives_file(tmp_path, size_bytes=5e-324))
    assert exc.value.field == "records[0].size_bytes" and "at least 1 byte, got 5e-324" in exc.value.message
