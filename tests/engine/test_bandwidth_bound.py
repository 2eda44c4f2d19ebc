"""Programs that only read HBM run at HBM bandwidth x efficiency, or at the per-core fill
bandwidth when too few programs run to saturate HBM."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import simulate_kernel

BLOCK_BYTES = 1 << 20


def read_own_block(nbytes: int = BLOCK_BYTES) -> list[dict]:
    """One step reading a block no other program reads (so the L2 never hits)."""
    return [{"transfers": [{"tensor": "X", "block": ["p0"], "bytes": nbytes}]}]


@pytest.mark.parametrize("efficiency", [1.0, 0.6])
@pytest.mark.parametrize("per_core", [16, 48])
def test_many_programs_run_at_hbm_bandwidth_times_efficiency(exactly, ideal_chip, kernel_trace, efficiency, per_core):
    chip = ideal_chip("h100-sxm", f"hbm.efficiency={efficiency}")
    programs = per_core * chip.num_cores
    sim = simulate_kernel(kernel_trace([programs], read_own_block()), chip)
    total = programs * BLOCK_BYTES
    assert sim.hbm_bytes == total
    assert sim.shared_cache_hit_rate == 0.0
    assert sim.latency_s == exactly(total / (chip.hbm.bandwidth_bytes_per_s * efficiency))
    assert sim.bound == "hbm"


@pytest.mark.parametrize("programs", [1, 4, 16])
def test_few_programs_are_limited_by_the_per_core_fill_bandwidth(exactly, ideal_chip, kernel_trace, programs):
    chip = ideal_chip("h100-sxm")
    per_core_bytes_per_s = chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz
    assert programs * per_core_bytes_per_s < chip.hbm.bandwidth_bytes_per_s  # HBM has room to spare
    sim = simulate_kernel(kernel_trace([programs], read_own_block()), chip)
    assert sim.latency_s == exactly(BLOCK_BYTES / per_core_bytes_per_s)


@pytest.mark.parametrize("programs", [1, 8, 29, 64, 500])
def test_latency_is_the_larger_of_fill_and_hbm_time(exactly, ideal_chip, kernel_trace, programs):
    chip = ideal_chip("h100-sxm")
    fill_s = BLOCK_BYTES / (chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz)
    hbm_s = programs * BLOCK_BYTES / chip.hbm.bandwidth_bytes_per_s
    sim = simulate_kernel(kernel_trace([programs], read_own_block()), chip)
    assert sim.latency_s == exactly(max(fill_s, hbm_s))


def test_tpu_copies_slow_down_with_hbm_efficiency(exactly, ideal_chip, kernel_trace):
    steps = 8
    trace = kernel_trace([steps], read_own_block())
    full = simulate_kernel(trace, ideal_chip("tpu-v5e"))
    half = simulate_kernel(trace, ideal_chip("tpu-v5e", "hbm.efficiency=0.5"))
    assert half.hbm_bytes == full.hbm_bytes == steps * BLOCK_BYTES
    # Every copy takes twice as long; nothing else changes.
    extra_s = steps * BLOCK_BYTES / ideal_chip("tpu-v5e").hbm.bandwidth_bytes_per_s
    assert half.latency_s == exactly(full.latency_s + extra_s)
    assert half.bound == "hbm"


@pytest.mark.parametrize("steps", [1, 8])
def test_tpu_pure_copy_kernel_moves_each_block_once_at_hbm_bandwidth(ideal_chip, kernel_trace, steps):
    chip = ideal_chip("tpu-v5e")
    sim = simulate_kernel(kernel_trace([steps], read_own_block()), chip)
    # Step i's compute overlaps step i+1's copy: copy_0, then steps whose time is the next copy,
    # then the last step's own work (here at most one pass over its block in VMEM).
    copies_s = steps * BLOCK_BYTES / chip.hbm.bandwidth_bytes_per_s
    vmem_pass_s = BLOCK_BYTES / (chip.local.bandwidth_bytes_per_cycle * chip.clock_hz)
    assert copies_s * (1 - 1e-9) <= sim.latency_s <= copies_s + vmem_pass_s + 1e-11
