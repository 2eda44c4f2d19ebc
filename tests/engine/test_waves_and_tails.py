"""Programs run in waves of cores x occupancy; a partial last wave (a tail) costs a whole
program time."""

from __future__ import annotations

import pytest

from accelsim.engine.chip import simulate_kernel

FLOPS = 2.0 * 128 * 256 * 64


def program_time(chip) -> float:
    """One matrix-only program alone on one core."""
    return FLOPS / (chip.matrix.flops_per_cycle_per_core["bf16"] * chip.clock_hz)


def matmul_step() -> list[dict]:
    return [{"compute": [{"unit": "matrix", "flops": FLOPS, "dtype": "bf16"}]}]


@pytest.mark.parametrize(
    ("times_cores", "plus", "waves"),
    [(1, 0, 1), (1, 1, 2), (1, -1, 1), (2, 0, 2), (2, 1, 3)],
    ids=["C", "C+1", "C-1", "2C", "2C+1"],
)
def test_one_program_per_core_runs_in_whole_waves(exactly, ideal_chip, kernel_trace, times_cores, plus, waves):
    chip = ideal_chip("h100-sxm")
    programs = times_cores * chip.num_cores + plus
    trace = kernel_trace([programs], matmul_step(), resources={"warps": 64})  # 64 warps: one program per SM
    sim = simulate_kernel(trace, chip)
    assert (sim.programs_per_core, sim.occupancy_limit) == (1, "warps")
    assert sim.latency_s == exactly(waves * program_time(chip))


def test_tail_runs_one_program_alone(ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm")
    trace = kernel_trace([chip.num_cores + 1], matmul_step(), resources={"warps": 64})
    sim = simulate_kernel(trace, chip, timeline=True)
    spans = sorted((s.start_ps, s.end_ps, s.args["programs"]) for s in sim.segments)
    assert [count for _, _, count in spans] == [chip.num_cores, 1]
    assert spans[1][0] == spans[0][1]  # the tail starts when the first wave frees its cores


def test_residency_does_not_speed_up_programs_that_saturate_their_core(exactly, ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm")
    programs = 4 * chip.num_cores
    one = simulate_kernel(kernel_trace([programs], matmul_step(), resources={"warps": 64}), chip)
    four = simulate_kernel(kernel_trace([programs], matmul_step(), resources={"warps": 16}), chip)
    assert (one.programs_per_core, four.programs_per_core) == (1, 4)
    assert one.latency_s == exactly(4 * program_time(chip))
    assert four.latency_s == exactly(4 * program_time(chip))


def test_a_core_with_two_resident_programs_takes_twice_as_long(ideal_chip, kernel_trace):
    chip = ideal_chip("h100-sxm")
    trace = kernel_trace([chip.num_cores + 1], matmul_step(), resources={"warps": 4})  # 16 per SM
    sim = simulate_kernel(trace, chip)
    # Programs do not migrate between SMs, and each alone saturates its SM's tensor cores: the SM
    # that holds two programs does 2T of work whatever the occupancy.
    assert sim.latency_s >= 2 * program_time(chip) * (1 - 1e-9)
