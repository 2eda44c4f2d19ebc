"""A what-if on the matrix units' count or shape moves the peak with it (the rate of each
unit, or of each systolic-array cell on a TPU, is kept), where it used to leave the peak
as published: a 256x256 MXU on a v5e came out no faster (slower where padding grew)."""

from __future__ import annotations

import pytest

from accelsim.arch.loader import builtin_names, load_raw
from accelsim.arch.model import Chip, load_arch
from accelsim.arch.loader import OverrideError
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import run_config

CHIPS = [name for name in builtin_names() if load_raw(name).data.get("kind") == "chip"]


def _published_peak(name: str) -> dict[str, float]:
    peak = load_raw(name).data["matrix_unit"]["flops_per_cycle_per_core"]
    return dict(peak["value"] if "value" in peak else peak)


@pytest.mark.parametrize("name", CHIPS)
def test_every_published_chip_keeps_the_peak_its_file_gives(name):
    chip = load_arch(name)
    assert isinstance(chip, Chip)
    assert dict(chip.matrix.flops_per_cycle_per_core) == _published_peak(name)


@pytest.mark.parametrize("name, what_if, factor", [
    ("tpu-v5e", "matrix_unit.shape=[256, 256]", 4),
    ("tpu-v6e", "matrix_unit.shape=[128, 128]", 1 / 4),
    ("tpu-v5e", "matrix_unit.units_per_core=8", 2),
    ("h100-sxm", "matrix_unit.units_per_core=8", 2),
    ("a100-sxm4-80gb", "matrix_unit.units_per_core=2", 1 / 2),
])
def test_the_peak_follows_the_unit_count_and_the_mxu_shape(name, what_if, factor):
    base, changed = load_arch(name), load_arch(name, [what_if])
    for dtype, rate in base.matrix.flops_per_cycle_per_core.items():
        assert changed.matrix.flops_per_cycle_per_core[dtype] == rate * factor


def test_a_256x256_mxu_on_v5e_runs_a_large_gemm_faster():
    family = get_family("gemm")
    params = {"M": 8192, "N": 8192, "K": 8192, "dtype": "bf16", "batch": 1, "groups": 1}
    times = []
    for shape in ("[128, 128]", "[256, 256]"):
        chip = load_arch("tpu-v5e", [f"matrix_unit.shape={shape}"])
        config = family.resolve_config(params, {"block_m": 1024, "block_n": 1024, "block_k": 1024}, chip)
        times.append(run_config(family, params, config, chip).sim.latency_s)
    assert times[1] < 0.75 * times[0]


def test_a_file_that_extends_a_chip_with_another_mxu_derives_its_peak(write_yaml):
    path = write_yaml("big.yaml", """\
        extends: tpu-v5e
        name: v5e-256
        matrix_unit:
          shape: {value: [256, 256], basis: estimate, note: what-if}
        """)
    chip = load_arch(str(path))
    assert chip.matrix.flops_per_cycle_per_core["bf16"] == 4 * _published_peak("tpu-v5e")["bf16"]


def test_a_peak_given_with_the_count_is_taken_as_given():
    chip = load_arch("tpu-v5e", ["matrix_unit.units_per_core=8", "matrix_unit.flops_per_cycle_per_core.bf16=1000"])
    assert chip.matrix.flops_per_cycle_per_core["bf16"] == 1000
    assert chip.matrix.flops_per_cycle_per_core["int8"] == _published_peak("tpu-v5e")["int8"]


def test_a_gpu_mma_shape_alone_is_refused_naming_the_field_that_holds_the_peak(cli):
    with pytest.raises(InputError) as error:
        load_arch("h100-sxm", ["matrix_unit.shape=[128, 8, 16]"])
    assert error.value.field == "matrix_unit.shape" and isinstance(error.value, OverrideError)
    assert "matrix_unit.flops_per_cycle_per_core, which holds the peak" in error.value.message
    result = cli("arch", "show", "h100-sxm", "--set", "matrix_unit.shape=[128, 8, 16]")
    assert result.code == 2 and len(result.err.splitlines()) == 1 and len(result.err) <= 300


def test_arch_show_says_the_peak_was_derived(cli):
    shown = cli("arch", "show", "tpu-v5e", "--set", "matrix_unit.shape=[256,256]").out
    (line,) = [row for row in shown.splitlines() if "matrix_unit.flops_per_cycle_per_core" in row]
    assert "bf16 524288" in line and "derived" in line and "tpu-v5e's peak" in line


def test_a_peak_scaled_past_the_largest_number_is_refused():
    with pytest.raises(InputError, match="over 1e\\+30"):
        load_arch("tpu-v5e", [f"matrix_unit.units_per_core={10**29}"])
