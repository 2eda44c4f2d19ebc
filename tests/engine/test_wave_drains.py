"""A wave of programs that started together with the same work stores its last tiles at the
same moment: the part of those stores that goes on to HBM drains at the wave's share of HBM
(bandwidth x efficiency / programs in the wave), not at each SM's port rate; writes the L2
keeps still drain at the port's rate, and a kernel smaller than a wave shares HBM among
fewer programs."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_occupancies, gpu_program_times, instruction_streams, simulate_kernel
from accelsim.engine.program_times import wave_programs
from accelsim.engine.programs import program_costs
from accelsim.trace.kernel import KernelTrace

STORE_BYTES = 65536
"""The last step's store: a 128 x 256 bf16 tile."""


def tiles(programs: int, k_steps: int = 4, mma_k: int = 64) -> KernelTrace:
    """One program per SM (200 KiB of shared memory each): ``k_steps`` loads and MMAs of depth
    ``mma_k``, then a store."""
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": "tiles", "grid": [programs], "pipeline_depth": 3,
                   "resources": {"warps": 8, "local_memory_bytes": 200 * 1024}},
        "tensors": {"A": {"shape": [programs, k_steps, 16384], "dtype": "bf16"},
                    "C": {"shape": [programs, 32768], "dtype": "bf16"}},
        "templates": [{"name": "t", "steps": [
            {"repeat": k_steps, "loop_var": "k",
             "transfers": [{"tensor": "A", "block": ["p0", "k"], "bytes": 32768}],
             "compute": [{"unit": "matrix", "flops": 2 * 128 * 256 * mma_k, "dtype": "bf16",
                          "shape": [128, 256, mma_k]}]},
            {"transfers": [{"tensor": "C", "block": ["p0"], "bytes": STORE_BYTES, "direction": "write"}]}]}],
    })


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])  # one fixed clock, no cap


def exposed(chip, trace: KernelTrace, hbm_write_share: float | None) -> np.ndarray:
    costs = program_costs(trace, chip)
    wave = None if hbm_write_share is None else wave_programs(trace, chip, [1])
    share = None if hbm_write_share is None else np.full(trace.num_programs, hbm_write_share)
    return gpu_program_times(chip, costs, np.zeros(trace.num_programs), trace.kernel.pipeline_depth,
                             instruction_streams(trace, chip), wave=wave, hbm_write_share=share).exposed


def port_rate(chip) -> float:
    return min(chip.local.fill_bandwidth_bytes_per_cycle, chip.local.bandwidth_bytes_per_cycle) * chip.clock_hz


def test_a_full_waves_stores_drain_at_its_share_of_hbm(h100):
    trace = tiles(4 * h100.num_cores)
    assert gpu_occupancies(trace, h100)[0][0] == 1
    share = h100.hbm.bandwidth_bytes_per_s * h100.hbm.efficiency / h100.num_cores
    added = exposed(h100, trace, 1.0) - exposed(h100, trace, None)
    assert np.allclose(added, STORE_BYTES / share - STORE_BYTES / port_rate(h100), rtol=1e-9)


def test_writes_the_l2_keeps_drain_at_the_port(h100):
    trace = tiles(4 * h100.num_cores)
    assert np.allclose(exposed(h100, trace, 0.0), exposed(h100, trace, None), rtol=1e-12)


def test_a_kernel_smaller_than_a_wave_shares_hbm_among_its_programs(h100):
    few, full = tiles(h100.num_cores // 4), tiles(h100.num_cores)
    assert wave_programs(few, h100, [1]).tolist() == [h100.num_cores // 4] * (h100.num_cores // 4)
    assert exposed(h100, few, 1.0)[0] < exposed(h100, full, 1.0)[0]


def test_the_replay_pays_the_waves_drain(h100):
    """Four waves of compute-bound programs (their loads hidden under MMAs at either HBM
    speed), each ending with 132 tiles stored at once: halving HBM's bandwidth adds each
    wave's drain once more (8.6 MB at 2.7 TB/s: 3.2 us), where at the port's rate it would
    add nothing."""
    trace = tiles(4 * h100.num_cores, mma_k=512)
    slow_hbm = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false", "hbm.bandwidth=1.675 TB/s"])
    drain_each = STORE_BYTES * h100.num_cores / (h100.hbm.bandwidth_bytes_per_s * h100.hbm.efficiency)
    grown = simulate_kernel(trace, slow_hbm).latency_s - simulate_kernel(trace, h100).latency_s
    assert grown == pytest.approx(4 * drain_each, rel=0.05)
