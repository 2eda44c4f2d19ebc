"""HBM queueing (``hbm.queueing_latency``): a load waits ``Q m u^2`` more at HBM
utilization ``u``, with ``u`` the kernel's own steady state (Little's law over its
resident programs) and ``m = 4 f (1 - f)`` the read-write mix of its HBM bytes (a share
``f`` reads): read-only and write-only kernels do not queue, unless the config gives a
share ``s`` of the queueing to any traffic (``hbm.queueing_unmixed_share``: ``m = s + (1 -
s) 4 f (1 - f)``). Closed form on a chip with round numbers: programs that each read one block and write part of one, one wave after
another. The first wave starts on an idle chip: it waits its unloaded latency, then moves
its bytes no faster than HBM serves the whole wave."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import simulate_kernel

BLOCK = 2048
LATENCY = 500e-9


def _kernel(kernel_trace, programs: int, warps: int, read: int = BLOCK, written: int = BLOCK // 4):
    transfers = [{"tensor": "X", "block": ["p0"], "bytes": read}] if read else []
    if written:
        transfers.append({"tensor": "Y", "block": ["p0"], "bytes": written, "direction": "write"})
    return kernel_trace([programs], [{"transfers": transfers}], pipeline_depth=1, resources={"warps": warps})


def _closed_form(chip, residents: int, queueing: float, written: int, share: float = 0.0) -> tuple[float, float]:
    """(program time, queue) solving q = Q m u(q)^2 by fixed-point iteration, where a
    program takes latency + q + residents x its port time (the block read and the part
    written), u is the resident programs' HBM rate over HBM's capacity and m = s + (1 - s)
    4 f (1 - f)."""
    moved = BLOCK + written
    port = moved / (chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz)
    capacity = chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency
    slots = chip.num_cores * residents
    reads = BLOCK / moved
    mix = share + (1 - share) * 4 * reads * (1 - reads)
    q = 0.0
    for _ in range(200):
        seconds = LATENCY + q + residents * port
        u = min(1.0, slots * moved / seconds / capacity)
        q = 0.5 * (q + queueing * mix * u * u)
    return LATENCY + q + residents * port, q


def _waves_s(chip, residents: int, waves: int, queueing: float, written: int, share: float = 0.0) -> float:
    """``waves`` waves: the first (on an idle chip) waits the unloaded latency (its first load
    finds no queue), then takes the rest of its program time or moves the wave's bytes at
    HBM's pace, whichever is slower; the rest take the steady-state program time of
    :func:`_closed_form`."""
    seconds, q = _closed_form(chip, residents, queueing, written, share)
    moved = BLOCK + written
    capacity = chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency
    first = LATENCY + max(seconds - LATENCY, chip.num_cores * residents * moved / capacity)
    return first + (waves - 1) * seconds


@pytest.mark.parametrize("warps, residents", [(32, 2), (16, 4)])
@pytest.mark.parametrize("queueing", [0.0, 300e-9, 2e-6])
@pytest.mark.parametrize("written", [BLOCK // 4, BLOCK // 16])
def test_waves_take_the_loaded_latency(ideal_chip, kernel_trace, warps, residents, queueing, written):
    chip = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", f"hbm.queueing_latency={queueing * 1e9:g} ns")
    waves = 3
    sim = simulate_kernel(_kernel(kernel_trace, waves * chip.num_cores * residents, warps, written=written), chip)
    assert sim.programs_per_core == residents
    seconds, queue = _closed_form(chip, residents, queueing, written)
    assert queue <= queueing
    assert (sim.hbm_queueing_s or 0.0) == pytest.approx(queue, rel=1e-6, abs=1e-15)
    assert sim.utilization["hbm"] < 0.9  # loads in flight set the speed, not HBM's bandwidth
    assert sim.latency_s == pytest.approx(_waves_s(chip, residents, waves, queueing, written), rel=1e-5)  # 1 ps ticks


def test_queueing_only_slows_and_grows_with_load(ideal_chip, kernel_trace):
    def latency(queueing: float, warps: int) -> float:
        chip = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", f"hbm.queueing_latency={queueing} ns")
        sim = simulate_kernel(_kernel(kernel_trace, 4 * chip.num_cores * (64 // warps), warps), chip)
        assert sim.utilization["hbm"] < 0.9  # loads in flight set the speed, not HBM's bandwidth
        return sim.latency_s

    light, heavy = 32, 16  # 2 and 4 resident programs per SM: HBM about 30% and 60% busy
    assert latency(0, light) < latency(200, light) < latency(800, light)
    slowdown_light = latency(800, light) / latency(0, light)
    slowdown_heavy = latency(800, heavy) / latency(0, heavy)
    assert slowdown_heavy > slowdown_light  # more loads in flight, a fuller HBM, a longer queue


@pytest.mark.parametrize("read, written", [(BLOCK, 0), (0, BLOCK)])
def test_read_only_and_write_only_kernels_do_not_queue(ideal_chip, kernel_trace, read, written):
    plain = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns")
    queued = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", "hbm.queueing_latency=2 us")
    trace = _kernel(kernel_trace, 3 * plain.num_cores * 4, 16, read=read, written=written)
    sim = simulate_kernel(trace, queued)
    assert sim.hbm_queueing_s == 0.0
    assert sim.latency_s == simulate_kernel(trace, plain).latency_s
    mixed = _kernel(kernel_trace, 3 * plain.num_cores * 4, 16, read=BLOCK, written=BLOCK)
    assert simulate_kernel(mixed, queued).hbm_queueing_s > 0


@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("written", [0, BLOCK // 4])
def test_the_unmixed_share_queues_any_traffic(ideal_chip, kernel_trace, share, written):
    chip = ideal_chip("h100-sxm", f"hbm.latency={LATENCY * 1e9:g} ns", "hbm.queueing_latency=2 us",
                      f"hbm.queueing_unmixed_share={share}")
    residents, waves = 4, 3
    sim = simulate_kernel(_kernel(kernel_trace, waves * chip.num_cores * residents, 16, written=written), chip)
    seconds, queue = _closed_form(chip, residents, 2e-6, written, share)
    assert (queue > 0) == (share > 0 or written > 0)
    assert sim.hbm_queueing_s == pytest.approx(queue, rel=1e-6, abs=1e-15)
    assert sim.latency_s == pytest.approx(_waves_s(chip, residents, waves, 2e-6, written, share), rel=1e-5)


def test_a_kernel_without_hbm_traffic_does_not_queue(ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm", "hbm.queueing_latency=1 us")
    steps = [{"compute": [{"unit": "vector", "flops": 1e6, "dtype": "fp32"}]}]
    plain = ideal_chip("h100-sxm")
    trace = kernel_trace([1000], steps)
    assert simulate_kernel(trace, chip).latency_s == simulate_kernel(trace, plain).latency_s


@pytest.mark.parametrize("setting", ["hbm.queueing_latency=100 ns", "hbm.queueing_unmixed_share=0.5"])
def test_a_tpu_config_refuses_it(cli, setting):
    result = cli("arch", "show", "tpu-v5e", "--set", setting)
    assert result.code == 2 and "applies to GPUs only" in result.err


def test_the_unmixed_share_is_a_fraction(cli):
    result = cli("arch", "show", "h100-sxm", "--set", "hbm.queueing_unmixed_share=1.5")
    assert result.code == 2 and "queueing_unmixed_share" in result.err and "\n" not in result.err.strip()
