"""A record timed as device time (``latency_kind: device``: a profiler's kernel duration, launch
gaps excluded) is compared with the simulated latency less its launch overhead but with the
part of it a kernel's device interval holds (``kernel_device_overhead``), in validate and in
calibrate alike; the default (``launches``) keeps the launch."""

from __future__ import annotations

import json
import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.validate.calibrate import errors, prepare
from accelsim.validate.compare import compare, read_measurements

HEADER = {"kind": "measurements", "schema_version": 1, "family": "copy", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}


@pytest.fixture
def records(tmp_path):
    base = {"family": "copy", "params": {"bytes": 1 << 20}, "latency_s": 5e-6}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**HEADER, "records": [
        {**base, "id": "as-launched"}, {**base, "id": "device", "latency_kind": "device"}]}))
    return read_measurements([path])


def test_device_time_leaves_out_the_launch_but_its_device_part(records):
    launched, device = compare(records)
    chip = load_arch("h100-sxm")
    assert 0 < chip.kernel_device_overhead_s < chip.launch_overhead_s
    assert launched.measurement.latency_kind == "launches" and device.measurement.latency_kind == "device"
    assert device.predicted_s == pytest.approx(
        launched.predicted_s - chip.launch_overhead_s + chip.kernel_device_overhead_s, abs=1e-12)


def test_without_a_device_part_the_whole_launch_is_left_out(records):
    launched, device = compare(records, overrides=["kernel_device_overhead=0 us"])
    launch = load_arch("h100-sxm").launch_overhead_s
    assert device.predicted_s == pytest.approx(launched.predicted_s - launch, abs=1e-12)


def test_calibration_sees_the_same_predictions(records):
    cases = prepare(records, "h100-sxm")
    log_errors = errors(cases, "h100-sxm", [])
    by_id = {c.measurement.id: c for c in compare(records)}
    for case, e in zip(cases, log_errors):
        assert e == pytest.approx(math.log(by_id[case.measurement.id].predicted_s / case.measurement.latency_s))


def test_the_device_part_is_at_most_the_whole_launch(records):
    """A fit (or what-if) may take ``launch_overhead`` below ``kernel_device_overhead``; a
    device timing then holds the whole launch, never more than the launch-inclusive time."""
    launched, device = compare(records, overrides=["launch_overhead=1 us"])
    assert device.predicted_s == pytest.approx(launched.predicted_s, abs=1e-12)
