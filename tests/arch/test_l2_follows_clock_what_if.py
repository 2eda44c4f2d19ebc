"""A clock what-if moves a GPU's L2 bandwidth by the rule DVFS moves it by
(``accelsim.arch.clock_domains``, ``docs/power.md``): ``--set clock=...`` (or with the boost
on, ``--set power.dvfs.boost.clock=...``) gives the L2 that a power cap lowering the clock
to the same value gives (``engine.energy.at_clock``): in the SM clock's domain it follows the
clock; with a clock of its own (GH100, ``shared_cache.keeps_own_clock_above``: 1.38 GHz) it
holds down to that SM clock and falls below it. A what-if that gives the bandwidth itself
keeps it as given."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.energy import at_clock
from accelsim.study.archs import resolve_point


def _l2(arch) -> float:
    return getattr(arch, "chip", arch).shared_cache.bandwidth_bytes_per_s


def test_a_clock_what_if_is_the_chip_dvfs_gives_in_the_sm_clock_domain():
    """A100 (no clock of its own): the whole chip at ``clock=1 GHz`` is the published chip
    DVFS lowers to 1 GHz, its L2 at 1 / 1.41 of 5.4 TB/s."""
    published = load_arch("a100-sxm4-80gb")
    what_if = load_arch("a100-sxm4-80gb", ["clock=1 GHz"])
    assert what_if == at_clock(published, 1e9)
    assert _l2(what_if) == pytest.approx(5.4e12 / 1.41)


@pytest.mark.parametrize("clock_mhz", [1900, 1500, 1380, 1200, 1000])
def test_a_boost_clock_what_if_keeps_the_l2s_own_clock(clock_mhz):
    """H100 with the boost on: the L2 holds its 10.7 TB/s down to 1.38 GHz and falls below it,
    as under a cap lowering the boost clock to the same value."""
    published = load_arch("h100-sxm")
    what_if = load_arch("h100-sxm", [f"power.dvfs.boost.clock={clock_mhz} MHz"])
    lowered = at_clock(published, clock_mhz * 1e6)
    assert what_if.clock_hz == lowered.clock_hz
    assert what_if.shared_cache == lowered.shared_cache
    assert _l2(what_if) == pytest.approx(10.7e12 * min(1.0, clock_mhz / 1380))


def test_a_fixed_clock_what_if_with_the_boost_off():
    what_if = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false", "clock=1.1 GHz"])
    assert _l2(what_if) == pytest.approx(10.7e12 * 1.1 / 1.38)
    assert _l2(load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])) == 10.7e12  # 1.83 GHz: above 1.38


def test_an_l2_in_the_sm_clock_domain_follows_the_boost_clock():
    sm_domain = ["shared_cache.keeps_own_clock_above=5 GHz"]
    what_if = load_arch("h100-sxm", [*sm_domain, "power.dvfs.boost.clock=1.5 GHz"])
    assert _l2(what_if) == pytest.approx(10.7e12 * 1.5 / 1.98)


def test_a_what_if_that_gives_the_bandwidth_keeps_it():
    assert _l2(load_arch("a100-sxm4-80gb", ["clock=1 GHz", "shared_cache.bandwidth=5 TB/s"])) == 5e12


def test_a_throttled_what_if_composes():
    """A cap lowering a what-if's clock further gives the L2 of the published chip at that clock."""
    for name, clock in (("a100-sxm4-80gb", "clock=1.2 GHz"), ("h100-sxm", "power.dvfs.boost.clock=1.2 GHz")):
        assert _l2(at_clock(load_arch(name, [clock]), 0.9e9)) == pytest.approx(_l2(at_clock(load_arch(name), 0.9e9)))


def test_the_what_if_reaches_a_systems_chip_and_a_sweep_point():
    assert _l2(load_arch("dgx-h100", ["chip.power.dvfs.boost.clock=1.1 GHz"])) == pytest.approx(10.7e12 * 1.1 / 1.38)
    assert _l2(resolve_point("a100-sxm4-80gb", ["clock=1 GHz"])) == _l2(load_arch("a100-sxm4-80gb", ["clock=1 GHz"]))


def test_arch_show_cites_the_derived_bandwidth(cli):
    result = cli("arch", "show", "a100-sxm4-80gb", "--set", "clock=1GHz")
    line = next(x for x in result.out.splitlines() if x.strip().startswith("shared_cache.bandwidth"))
    assert "3.83 TB/s" in line and "derived" in line and "with the SMs at 1.41 GHz" in line
