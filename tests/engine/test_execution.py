"""``kernel.execution``: warp specialization (consumer warpgroups as instruction streams),
TMA loads (their extra latency) and persistent work units (a unit after a CTA's first
pays neither the CTA launch nor its first load's latency nor the fill)."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_program_times, instruction_streams, simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.errors import InputError
from accelsim.trace.kernel import Execution, KernelTrace

PROGRAMS = 528
"""Four waves of one program per SM on an H100 (132 SMs)."""


def trace(execution: dict | None = None, k_steps: int = 8, step_bytes: int = 32768) -> KernelTrace:
    kernel = {"name": "tiles", "grid": [PROGRAMS], "pipeline_depth": 4,
              "resources": {"warps": 12, "local_memory_bytes": 200 * 1024}}
    if execution is not None:
        kernel["execution"] = execution
    return KernelTrace.model_validate({
        "schema_version": 1, "kernel": kernel,
        "tensors": {"A": {"shape": [PROGRAMS, k_steps], "dtype": "bf16"},
                    "C": {"shape": [PROGRAMS], "dtype": "bf16"}},
        "templates": [{"name": "t", "steps": [
            {"repeat": k_steps, "loop_var": "k",
             "transfers": [{"tensor": "A", "block": ["p0", "k"], "bytes": step_bytes}],
             "compute": [{"unit": "matrix", "flops": 2 * 128 * 256 * 64, "dtype": "bf16", "shape": [128, 256, 64]},
                         {"unit": "vector", "flops": 128 * 256 * 2, "dtype": "fp32", "useful": False}]},
            {"transfers": [{"tensor": "C", "block": ["p0"], "bytes": 2 * step_bytes, "direction": "write"}]}]}],
    })


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm")


def times(chip, t: KernelTrace):
    costs = program_costs(t, chip)
    return gpu_program_times(chip, costs, np.zeros(PROGRAMS), t.kernel.pipeline_depth,
                             instruction_streams(t, chip)), costs


def test_units_after_a_ctas_first_pay_no_launch_latency_or_fill(h100):
    plain, _ = times(h100, trace())
    persistent, costs = times(h100, trace({"persistent_ctas": 132, "epilogue": "overlapped"}))
    assert costs.follows[:132].sum() == 0 and costs.follows[132:].all()
    assert np.array_equal(persistent.exposed[:132], plain.exposed[:132])
    saved = plain.exposed[132:] - persistent.exposed[132:]
    assert (saved > h100.program_overhead_s + h100.hbm.latency_s).all()


def test_an_overlapped_epilogue_hides_a_following_units_stores(h100):
    exposed, _ = times(h100, trace({"persistent_ctas": 132, "epilogue": "exposed"}))
    overlapped, _ = times(h100, trace({"persistent_ctas": 132, "epilogue": "overlapped"}))
    assert (overlapped.exposed[:132] <= exposed.exposed[:132]).all()  # a first unit drains alone, or in step
    assert (overlapped.exposed[132:] < exposed.exposed[132:]).all()


def test_tma_loads_take_the_bulk_copy_latency_on_top(h100):
    plain, _ = times(h100, trace())
    tma, costs = times(h100, trace({"loads": "tma"}))
    assert h100.local.bulk_copy_latency_s > 0
    assert costs.extra_load_latency_s[0] == pytest.approx(h100.local.bulk_copy_latency_s)
    assert tma.exposed[0] - plain.exposed[0] == pytest.approx(h100.local.bulk_copy_latency_s)


def test_consumer_warpgroups_are_the_instruction_streams(h100):
    assert instruction_streams(trace(), h100) == 3  # 12 warps over 4 tensor cores
    assert instruction_streams(trace({"consumers": 1}), h100) == 1
    one, _ = times(h100, trace({"consumers": 1}))
    two, _ = times(h100, trace({"consumers": 2}))
    assert (one.chain > two.chain).all()


def test_a_persistent_kernel_of_short_units_is_faster_and_bytes_stay_exact(h100):
    plain = simulate_kernel(trace(k_steps=2, step_bytes=1024), h100)
    persistent = simulate_kernel(trace({"persistent_ctas": 132, "consumers": 2}, k_steps=2, step_bytes=1024), h100)
    assert persistent.latency_s < plain.latency_s
    assert persistent.hbm_bytes == plain.hbm_bytes and persistent.flops == plain.flops


def test_a_chip_without_tma_adds_no_latency():
    a100 = load_arch("a100-sxm4-80gb")
    costs = program_costs(trace({"loads": "tma"}), a100)
    assert not costs.extra_load_latency_s.any()


def test_execution_fields_are_checked():
    with pytest.raises(ValueError):
        Execution(loads="dma")
    with pytest.raises(ValueError):
        Execution(persistent_ctas=0)


def test_persistent_units_in_step_store_at_their_share_of_hbm(h100):
    """Consumers that wait for their tile's store, on every SM at once, drain it at one SM's
    share of HBM (bandwidth x efficiency / SMs), not at the port's rate; ping-pong hides it."""
    from accelsim.engine.program_times import hbm_share_per_core

    drain = 2 * 32768
    exposed, _ = times(h100, trace({"persistent_ctas": 132, "epilogue": "exposed"}))
    alone, _ = times(h100, trace({"epilogue": "exposed"}))  # one CTA per program: not in step
    port = h100.local.fill_bandwidth_bytes_per_cycle * h100.clock_hz
    later = exposed.exposed[132:]
    assert np.allclose(later, drain / hbm_share_per_core(h100))
    assert np.allclose(alone.exposed[:132] - exposed.exposed[:132] + drain / hbm_share_per_core(h100),
                       drain / min(port, h100.local.bandwidth_bytes_per_cycle * h100.clock_hz), rtol=1e-9)
