"""A replayed step's energy: per device its compute ops' dynamic energy, static power while it
computes or communicates and idle power while it waits; the links' bytes at their energy per
byte (``accelsim.system.energy``)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.system.replay import replay
from tests.system.conftest import compute, spmd

GEMM_FLOPS = 2 * 4096.0**3


def _roofline(name: str, flops: float, nbytes: float, **extra) -> dict:
    return {"name": name, "kind": "compute", "flops": flops, "bytes": nbytes, "dtype": "bf16", "unit": "matrix",
            **extra}


def test_a_measured_op_counts_at_tdp_and_waiting_at_idle(dgx):
    """Every device computes 1 ms (a measured op: its activity unknown, taken at the TDP), then
    all-reduces."""
    trace = spmd([compute("work", 1e-3),
                  {"name": "ar", "kind": "all-reduce", "bytes": 1 << 20, "deps": ["work"]}], devices="0-7")
    result = replay(trace, dgx).result()
    power = dgx.chip.power
    device = result.devices[0]
    expected = ((power.tdp_w - power.static_w) * 1e-3 + power.static_w * (device.compute_s + device.exposed_comm_s)
                + power.idle_w * device.idle_s)
    assert device.energy_j == pytest.approx(expected)
    assert result.energy_j == pytest.approx(sum(d.energy_j for d in result.devices) + result.link_energy_j)


def test_links_carry_their_bytes_at_the_chips_link_energy(dgx):
    trace = spmd([{"name": "ar", "kind": "all-reduce", "bytes": 1 << 26}])
    result = replay(trace, dgx).result()
    carried = sum(link.bytes for link in result.links)
    assert result.link_energy_j == pytest.approx(carried * dgx.chip.power.interconnect_j_per_byte)


def test_a_cap_slows_a_compute_bound_roofline_op_and_saves_energy():
    free = load_arch("dgx-h100-published")
    capped = load_arch("dgx-h100-published", ['chip.power.cap="400 W"'])
    trace = spmd([_roofline("gemm", GEMM_FLOPS, 3 * 2 * 4096.0**2)])
    fast, slow = replay(trace, free).result(), replay(trace, capped).result()
    assert slow.step_time_s > fast.step_time_s
    assert slow.energy_j < fast.energy_j
    assert slow.energy_j / slow.step_time_s <= 8 * 400.0 + 1e-6


def test_a_memory_bound_roofline_op_keeps_its_time_under_a_cap():
    free = load_arch("dgx-h100-published")
    capped = load_arch("dgx-h100-published", ['chip.power.cap="400 W"'])
    trace = spmd([_roofline("copy", 1e6, 1e10)])
    assert replay(trace, capped).result().step_time_s == replay(trace, free).result().step_time_s


def test_the_step_json_and_row_carry_energy(dgx):
    result = replay(spmd([_roofline("gemm", GEMM_FLOPS, 1e8)]), dgx).result()
    out = result.to_json()
    assert out["energy_j"] == result.energy_j and out["average_power_w"] == pytest.approx(
        result.energy_j / result.step_time_s)
    assert "energy_j" in out["devices"][0] and result.row()["energy_j"] == result.energy_j
