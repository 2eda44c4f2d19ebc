"""Resident programs per core follow the tightest of the SM's limits; a program that does
not fit is bad input naming the resource."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_occupancy, simulate_kernel
from accelsim.errors import InputError

KIB = 1024
NOTHING = [{"compute": [{"unit": "vector", "flops": 1.0}]}]


@pytest.fixture(scope="module")
def h100():
    """H100: 32 programs, 64 warps, 65536 registers, 228 KiB shared memory (227 KiB per program) per SM."""
    return load_arch("h100-sxm")


@pytest.mark.parametrize(
    ("resources", "per_core", "limit"),
    [
        ({}, 16, "warps"),  # default 4 warps: 64 // 4
        ({"warps": 1}, 32, "programs"),
        ({"warps": 8}, 8, "warps"),
        ({"local_memory_bytes": 100 * KIB}, 2, "local_memory"),  # 228 KiB // 100 KiB
        ({"local_memory_bytes": 50 * KIB, "warps": 1}, 4, "local_memory"),
        ({"local_memory_bytes": 227 * KIB}, 1, "local_memory"),  # the largest a program may have
        ({"registers_per_thread": 128}, 4, "registers"),  # 65536 // (128 x 4 x 32)
        ({"registers_per_thread": 255, "warps": 8}, 1, "registers"),  # 65536 // (255 x 256)
        # a warp's registers round up to 256 (8 per thread): 82 takes 88, so 2 programs of 8
        # warps, not the 3 that 65536 // (82 x 256) would give; 80 is already a multiple
        ({"registers_per_thread": 82, "warps": 8}, 2, "registers"),
        ({"registers_per_thread": 80, "warps": 8}, 3, "registers"),
    ],
)
def test_the_tightest_limit_sets_programs_per_core(h100, kernel_trace, resources, per_core, limit):
    trace = kernel_trace([1000], NOTHING, resources=resources)
    assert gpu_occupancy(trace, h100) == (per_core, limit)
    sim = simulate_kernel(trace, h100)
    assert (sim.programs_per_core, sim.occupancy_limit) == (per_core, limit)


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"local_memory_bytes": 227 * KIB + 1}, "kernel.resources.local_memory_bytes"),
        ({"warps": 65}, "kernel.resources.warps"),
        ({"registers_per_thread": 256}, "kernel.resources.registers_per_thread"),
        ({"registers_per_thread": 255, "warps": 64}, "kernel.resources"),  # 255 x 2048 > 65536
    ],
)
def test_a_program_that_does_not_fit_is_bad_input(h100, kernel_trace, resources, field):
    trace = kernel_trace([4], NOTHING, resources=resources)
    with pytest.raises(InputError) as caught:
        simulate_kernel(trace, h100)
    assert caught.value.field == field
    assert h100.name in caught.value.message


def test_tpu_program_larger_than_vmem_is_bad_input(kernel_trace):
    chip = load_arch("tpu-v5e")
    trace = kernel_trace([4], NOTHING, resources={"local_memory_bytes": int(chip.local.capacity_bytes) + 1})
    with pytest.raises(InputError) as caught:
        simulate_kernel(trace, chip)
    assert caught.value.field == "kernel.resources.local_memory_bytes"


def test_tpu_runs_one_grid_step_at_a_time(kernel_trace):
    sim = simulate_kernel(kernel_trace([64], NOTHING), load_arch("tpu-v5e"))
    assert (sim.programs_per_core, sim.occupancy_limit) == (1, "sequential grid")
