"""Fitting a node's NCCL model: recovers known values from measurements it made itself,
keeps the held-out split out of training, and reads the measurement file."""

import dataclasses
import json

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.validate.calibrate import is_held_out
from accelsim.validate.collectives import (
    CollectiveMeasurement, TuningParameter, fit, load_measurements, split,
)

NVLS_EFFICIENCY = TuningParameter("nvls_efficiency", 0.3, 1.0)
LL_BASE = TuningParameter("protocols.ll.base_latency", 0.0, 30e-6, "seconds")


def _synthetic(node, sizes):
    topo = build_topology(node)
    out = []
    for size in sizes:
        r = simulate_collective(topo, "all-reduce", size)
        out.append(CollectiveMeasurement(id=f"synthetic-{size}", system=node.name, collective="all-reduce", ranks=8,
                                         size_bytes=size, algorithm="auto", time_s=r.latency_s, source="test"))
    return out


def test_fit_recovers_the_values_that_made_the_measurements():
    node = load_arch("dgx-h100")
    truth = dataclasses.replace(node.collectives, nvls_efficiency=0.6)
    truth = LL_BASE.set(truth, 12e-6)
    cases = _synthetic(dataclasses.replace(node, collectives=truth), [2.0**k for k in range(10, 34, 2)])
    result = fit(cases, node, [NVLS_EFFICIENCY, LL_BASE], sweeps=3)
    assert result.values["nvls_efficiency"] == pytest.approx(0.6, rel=0.01)
    assert result.values["protocols.ll.base_latency"] == pytest.approx(12e-6, rel=0.02)


def test_the_split_is_the_kernel_calibration_hash():
    cases = _synthetic(load_arch("dgx-h100"), [2.0**k for k in range(10, 30)])
    train, held = split(cases)
    assert held and train and all(is_held_out(c.id) for c in held) and not any(is_held_out(c.id) for c in train)


def test_measurements_take_the_faster_nccl_tests_column_or_a_bus_bandwidth(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"records": [
        {"id": "a", "system": "dgx-h100", "collective": "all-reduce", "ranks": 8, "size_bytes": 4096,
         "algorithm": "auto", "time_out_of_place_us": 23.6, "time_in_place_us": 16.5, "source": "s"},
        {"id": "b", "system": "dgx-h200", "collective": "all-reduce", "ranks": 8, "size_bytes": 2**33,
         "algorithm": "ring", "busbw_GBps": 350.0, "source": "s", "tool": "nccl-tests"},
    ]}))
    a, b = load_measurements(path)
    assert a.time_s == pytest.approx(16.5e-6)
    assert b.busbw_bytes_per_s == pytest.approx(350e9)
