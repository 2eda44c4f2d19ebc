"""``power.dvfs.boost`` (``docs/power.md``, "The boost clock"): on by default for h100-sxm; on, the resolved
chip runs at the boost clock under the TDP as its cap, its matrix efficiency becomes the pipe's
clock-free efficiency (the reference GEMM's throughput over the peak at the clock it ran at) and
its matrix energy per flop moves to the boost clock by the DVFS rule's V^2."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError

ON = ["power.dvfs.boost.enabled=true"]
OFF = ["power.dvfs.boost.enabled=false"]


def test_off_the_chip_is_as_published():
    chip = load_arch("h100-sxm", OFF)
    assert chip.clock_hz == pytest.approx(1.83e9)
    assert chip.matrix.efficiency == pytest.approx(0.80)
    assert chip.power.cap_w is None


def test_on_the_clock_is_the_boost_and_the_cap_the_tdp():
    chip = load_arch("h100-sxm", ON)
    assert chip.clock_hz == pytest.approx(1.98e9)
    assert chip.power.cap_w == chip.power.tdp_w == 700.0


def test_a_given_cap_stays():
    assert load_arch("h100-sxm", ON + ['power.cap="500 W"']).power.cap_w == 500.0


def test_the_efficiency_is_the_reference_gemms_throughput_over_its_clocks_peak():
    published, boosted = load_arch("h100-sxm", OFF), load_arch("h100-sxm", ON)
    sustained = published.matrix_flops_per_s("bf16") * published.matrix.efficiency
    peak_at_reference = boosted.matrix_flops_per_s("bf16") * 1.525e9 / boosted.clock_hz
    assert boosted.matrix.efficiency == pytest.approx(sustained / peak_at_reference)


def test_the_chained_efficiency_is_its_kernels_throughput_over_the_peak_at_their_clock():
    """FlashAttention-2's share of the peak quoted at 1.83 GHz, reached at the 1.98 GHz boost it
    ran at: its flops per second stay those the share gives at the quoted clock."""
    published, boosted = load_arch("h100-sxm", OFF), load_arch("h100-sxm", ON)
    assert boosted.matrix.chained_efficiency == pytest.approx(published.matrix.chained_efficiency * 1.83 / 1.98)
    assert (boosted.matrix_flops_per_s("bf16") * boosted.matrix.chained_efficiency
            == pytest.approx(published.matrix_flops_per_s("bf16") * published.matrix.chained_efficiency))


def test_a_records_locked_clock_keeps_the_chained_share_per_cycle():
    locked = load_arch("h100-sxm", ON + ["power.dvfs.boost.clock=1.5 GHz"])
    assert locked.clock_hz == pytest.approx(1.5e9)
    assert locked.matrix.chained_efficiency == pytest.approx(load_arch("h100-sxm", ON).matrix.chained_efficiency)


def test_the_matrix_energy_moves_to_the_boost_clock_by_v_squared():
    published, boosted = load_arch("h100-sxm", OFF), load_arch("h100-sxm", ON)
    for dtype, joules in published.power.matrix_j_per_flop.items():
        assert boosted.power.matrix_j_per_flop[dtype] == pytest.approx(joules * (1.98 / 1.525) ** 2)
    assert boosted.power.vector_j_per_flop == published.power.vector_j_per_flop


def test_chips_without_a_reading_have_no_boost_section():
    for name in ("h100-pcie", "h100-nvl", "a100-sxm4-80gb", "b200"):
        chip = load_arch(name)
        assert chip.power.cap_w is None


def test_a_reference_clock_that_makes_the_pipe_pass_its_peak_is_refused():
    with pytest.raises(InputError, match="at most 1"):
        load_arch("h100-sxm", ON + ['power.dvfs.boost.matrix_reference_clock="1.4 GHz"'])


def test_a_chained_reference_clock_that_makes_the_chain_pass_its_peak_is_refused():
    with pytest.raises(InputError, match="at most 1") as caught:
        load_arch("h100-sxm", ON + ["matrix_unit.chained_efficiency=0.9", 'power.dvfs.boost.chained_reference_clock="1.5 GHz"'])
    assert caught.value.field == "power.dvfs.boost.chained_reference_clock"


def test_switching_it_on_where_there_is_no_section_names_it():
    with pytest.raises(InputError, match="no 'power.dvfs.boost' section"):
        load_arch("h100-pcie", ON)


def test_on_a_clock_override_is_refused_for_the_boost_clock():
    """With the boost on, ``clock`` is the clock the matrix efficiency was quoted at: an
    override would rescale the pipe efficiency and leave the kernels at the boost clock."""
    with pytest.raises(InputError) as caught:
        load_arch("h100-sxm", ON + ["clock=1.2 GHz"])
    assert caught.value.field == "clock" and "power.dvfs.boost.clock" in caught.value.message
    assert "power.dvfs.boost.enabled=false" in caught.value.message  # the way back to a fixed clock
    assert load_arch("h100-sxm", OFF + ["clock=1.2 GHz"]).clock_hz == pytest.approx(1.2e9)  # off: as ever


@pytest.mark.parametrize("name, boost_hz", [("h100-sxm", 1.98e9), ("h200-sxm", 1.98e9), ("gh200", 1.98e9),
                                            ("h100-pcie", None), ("h100-nvl", None), ("b200", None)])
def test_on_by_default_where_the_section_is(name, boost_hz):
    """h100-sxm switches it on; h200-sxm and gh200 inherit it; h100-pcie and h100-nvl drop it."""
    assert load_arch(name).power.boost_clock_hz == (pytest.approx(boost_hz) if boost_hz else None)


def test_systems_of_boosted_chips_inherit_it():
    assert load_arch("dgx-h100-published").chip.power.boost_clock_hz == pytest.approx(1.98e9)
    assert load_arch("dgx-h200").chip.power.boost_clock_hz == pytest.approx(1.98e9)
