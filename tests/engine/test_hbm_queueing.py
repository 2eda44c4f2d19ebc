"""HBM queueing (``hbm.queueing_latency``): a load waits ``Q u^2`` more at HBM
utilization ``u``, with ``u`` the kernel's own steady state (Little's law over its
resident programs). Closed form on a chip with round numbers: programs that each read one
block once, one wave after another."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import simulate_kernel

BLOCK = 2048
LATENCY = 500e-9


def _reads(kernel_trace, programs: int, warps: int):
    steps = [{"transfers": [{"tensor": "X", "block": ["p0"], "bytes": BLOCK}]}]
    return kernel_trace([programs], steps, pipeline_depth=1, resources={"warps": warps})


def _closed_form(chip, residents: int, queueing: float) -> tuple[float, float]:
    """(program time, queue) solving q = Q u(q)^2 by fixed-point iteration, where a program
    takes latency + q + residents x its port time and u is the resident programs' HBM rate
    over HBM's capacity."""
    port = BLOCK / (chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz)
    capacity = chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency
    slots = chip.num_cores * residents
    q = 0.0
    for _ in range(200):
        seconds = LATENCY + q + residents * port
        u = min(1.0, slots * BLOCK / seconds / capacity)
        q = 0.5 * (q + queueing * u * u)
    return LATENCY + q + residents * port, q


@pytest.mark.parametrize("warps, residents", [(32, 2), (16, 4)])
@pytest.mark.parametrize("queueing", [0.0, 300e-9, 2e-6])
def test_waves_take_the_loaded_latency(ideal_chip, kernel_trace, warps, residents, queueing):
    chip = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", f"hbm.queueing_latency={queueing * 1e9:g} ns")
    waves = 3
    sim = simulate_kernel(_reads(kernel_trace, waves * chip.num_cores * residents, warps), chip)
    assert sim.programs_per_core == residents
    seconds, queue = _closed_form(chip, residents, queueing)
    assert queue <= queueing
    assert sim.utilization["hbm"] < 0.9  # loads in flight set the speed, not HBM's bandwidth
    assert sim.latency_s == pytest.approx(waves * seconds, rel=1e-5)  # 1 ps ticks


def test_queueing_only_slows_and_grows_with_load(ideal_chip, kernel_trace):
    def latency(queueing: float, warps: int) -> float:
        chip = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", f"hbm.queueing_latency={queueing} ns")
        sim = simulate_kernel(_reads(kernel_trace, 4 * chip.num_cores * (64 // warps), warps), chip)
        assert sim.utilization["hbm"] < 0.9  # loads in flight set the speed, not HBM's bandwidth
        return sim.latency_s

    light, heavy = 32, 16  # 2 and 4 resident programs per SM: HBM about 30% and 60% busy
    assert latency(0, light) < latency(200, light) < latency(800, light)
    slowdown_light = latency(800, light) / latency(0, light)
    slowdown_heavy = latency(800, heavy) / latency(0, heavy)
    assert slowdown_heavy > slowdown_light  # more loads in flight, a fuller HBM, a longer queue


def test_a_kernel_without_hbm_traffic_does_not_queue(ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm", "hbm.queueing_latency=1 us")
    steps = [{"compute": [{"unit": "vector", "flops": 1e6, "dtype": "fp32"}]}]
    plain = ideal_chip("h100-sxm")
    trace = kernel_trace([1000], steps)
    assert simulate_kernel(trace, chip).latency_s == simulate_kernel(trace, plain).latency_s


def test_a_tpu_config_refuses_it(cli):
    result = cli("arch", "show", "tpu-v5e", "--set", "hbm.queueing_latency=100 ns")
    assert result.code == 2 and "applies to GPUs only" in result.err
