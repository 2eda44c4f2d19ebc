"""A kernel's energy is its activity at the chip's energy per operation and per byte, plus
static power over its latency (``accelsim.engine.energy``)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.energy import kernel_activity
from accelsim.families import get_family
from accelsim.families.search import split_params


def _run(arch: str, family: str, params: dict[str, str], overrides=()):
    chip = load_arch(arch, list(overrides))
    fam = get_family(family)
    problem, config, _ = split_params(fam, params)
    trace = fam.build(problem, fam.resolve_config(problem, config, chip), chip)
    return chip, trace, simulate_kernel(trace, chip)


GEMM = {"M": "2048", "N": "2048", "K": "2048"}


def test_the_parts_are_the_activity_at_the_configs_energies():
    # at the fixed clock: no boost, so no cap to replay it under
    chip, trace, sim = _run("h100-sxm", "gemm", GEMM, ["power.dvfs.boost.enabled=false"])
    power, parts, activity = chip.power, sim.energy.joules_by_part, kernel_activity(trace, chip, sim)
    assert parts["matrix_unit"] == pytest.approx(activity.matrix_flops["bf16"] * power.matrix_j_per_flop["bf16"])
    assert parts["hbm"] == pytest.approx(sim.hbm_bytes * power.hbm_j_per_byte)
    assert parts["shared_cache"] == pytest.approx(sim.used["shared_cache"] * power.shared_cache_j_per_byte)
    assert parts["static"] == pytest.approx(power.static_w * sim.latency_s)
    assert sim.energy.joules == pytest.approx(sum(parts.values()))
    assert sim.energy.average_power_w == pytest.approx(sim.energy.joules / sim.latency_s)


def test_executed_matrix_flops_count_padding():
    """A GEMM whose N is not a multiple of the MMA granule pays for the padded columns."""
    chip, trace, sim = _run("h100-sxm", "gemm", {"M": "2048", "N": "2052", "K": "2048"})
    assert kernel_activity(trace, chip, sim).matrix_flops["bf16"] > sim.flops


def test_a_copy_spends_its_energy_on_memory_not_units():
    _, _, sim = _run("h100-sxm", "copy", {"bytes": str(1 << 30)})
    parts = sim.energy.joules_by_part
    assert parts["matrix_unit"] == 0 and parts["hbm"] > parts["vector_unit"]


def test_a_chip_without_a_power_model_reports_no_energy():
    _, _, sim = _run("mi300x", "gemm", GEMM)
    assert sim.energy is None and sim.result().energy_j is None
    assert "energy_j" not in sim.result().to_json()


def test_energy_is_in_the_result_and_its_row():
    _, _, sim = _run("tpu-v5e", "gemm", GEMM)
    result = sim.result()
    out = result.to_json()
    assert out["energy_j"] == result.energy_j > 0 and out["average_power_w"] > 0
    assert result.row()["energy_j_by_part.static"] == result.energy_j_by_part["static"]
    assert "power_cap_w" not in out
