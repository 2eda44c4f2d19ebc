"""``power.dvfs.boost.from_idle`` and ``cap_delay`` (``docs/power.md``, "The limiter's delay"): how
the kernels meet the power limiter, a run condition a record sets; the delay is resolved onto the
power model only for kernels launched from idle, and from idle without a delay is refused."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError

FROM_IDLE = ["power.dvfs.boost.from_idle=true"]


def test_back_to_back_is_the_default_and_has_no_delay():
    assert load_arch("h100-sxm").power.cap_delay_s is None
    assert load_arch("h200-sxm").power.cap_delay_s is None


def test_from_idle_resolves_the_published_delay():
    assert load_arch("h100-sxm", FROM_IDLE).power.cap_delay_s == pytest.approx(5e-3)
    assert load_arch("h200-sxm", FROM_IDLE).power.cap_delay_s == pytest.approx(5e-3)


def test_the_delay_is_a_what_if_too():
    chip = load_arch("h200-sxm", FROM_IDLE + ["power.dvfs.boost.cap_delay=20 ms"])
    assert chip.power.cap_delay_s == pytest.approx(20e-3)


def test_from_idle_without_a_delay_is_refused_in_one_line():
    with pytest.raises(InputError) as caught:
        load_arch("h100-sxm", FROM_IDLE + ["power.dvfs.boost.cap_delay=null"])
    assert "cap_delay" in str(caught.value) and "\n" not in str(caught.value)


def test_a_chip_without_the_boost_section_refuses_it():
    with pytest.raises(InputError, match="power.dvfs.boost"):
        load_arch("b200", FROM_IDLE)
