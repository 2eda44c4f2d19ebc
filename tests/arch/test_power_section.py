"""The power section of a chip config: watts with their unit, idle and static power below the
TDP, a DVFS exponent from 1 to 4, a cap set with --set; bad values are one located line."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.arch.schema import power_fit_paths
from tests.arch.test_bad_input import assert_one_line_error, config_file, h100  # noqa: F401 (fixtures)

REQUIRED = ("a100-sxm4-80gb", "h100-sxm", "h200-sxm", "b200", "tpu-v5e", "tpu-v5p", "tpu-v6e")


@pytest.mark.parametrize("name", REQUIRED)
def test_the_required_chips_have_a_power_model(name):
    chip = load_arch(name)
    power = chip.power
    assert 0 < power.static_w < power.tdp_w and 0 < power.idle_w < power.tdp_w
    assert set(chip.matrix.flops_per_cycle_per_core) <= set(power.matrix_j_per_flop)
    assert power.cap_w == (power.tdp_w if power.boost_clock_hz else None)  # the boost runs under the TDP


def test_a_cap_is_a_what_if():
    assert load_arch("h100-sxm", ['power.cap="500 W"']).power.cap_w == 500.0
    assert load_arch("dgx-h100-published", ['chip.power.cap="0.4 kW"']).chip.power.cap_w == 400.0


def test_derived_chips_keep_their_own_tdp():
    assert load_arch("h100-pcie").power.tdp_w == 350.0 and load_arch("b300").power.tdp_w == 1100.0


def test_the_fittable_power_fields():
    assert {"power.static", "power.hbm_pj_per_byte", "power.dvfs.exponent"} <= set(power_fit_paths())


@pytest.mark.parametrize("path, value, fragments", [
    ("power.cap", "500", ("power.cap", "a power with a unit")),
    ("power.cap", "500 GHz", ("power.cap", "unit of a frequency")),
    ("power.static", "800 W", ("power", "'static' (800 W) must be below 'tdp'")),
    ("power.dvfs.exponent", "5", ("exponent", "from 1")),
    ("power.hbm_pj_per_byte", "-1", ("power.hbm_pj_per_byte",)),
])
def test_a_bad_power_value_is_one_line(cli, path, value, fragments):
    result = cli("arch", "show", "h100-sxm", "--set", f"{path}={value}")
    assert_one_line_error(result, *fragments)


def test_an_unknown_power_field_in_a_file_is_refused(cli, config_file):
    path = config_file(lambda data: data["power"].update(watts="1 W"))
    assert_one_line_error(cli("arch", "show", str(path)), "power.watts")
