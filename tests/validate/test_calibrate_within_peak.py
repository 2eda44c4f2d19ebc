"""validate.calibrate.within_the_peak: with ``power.dvfs.boost`` on, a matrix efficiency's
search range stops where the pipe would pass its peak at the boost clock, so a fit of any
records (a probe of the range's top included) never asks for a config the loader refuses."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.validate.calibrate import DEFAULT_PARAMETERS, within_the_peak


def _high(arch: str, path: str) -> float:
    return next(p.high for p in within_the_peak(arch, DEFAULT_PARAMETERS) if p.path == path)


def test_a_boosted_chip_bounds_the_matrix_efficiency_below_its_reference_share():
    high = _high("h100-sxm", "matrix_unit.efficiency")
    assert high < 1.0
    load_arch("h100-sxm", [f"matrix_unit.efficiency={high:.6g}"])  # the top of the range loads
    with pytest.raises(InputError):
        load_arch("h100-sxm", [f"matrix_unit.efficiency={high * 1.01:.6g}"])  # just past it does not


def test_a_chip_without_the_boost_keeps_the_declared_ranges():
    assert within_the_peak("a100-sxm4-80gb", DEFAULT_PARAMETERS) == list(DEFAULT_PARAMETERS)
    assert within_the_peak("h100-sxm", DEFAULT_PARAMETERS, ["power.dvfs.boost.enabled=false"]) == list(DEFAULT_PARAMETERS)


def test_parameters_the_chip_does_not_bound_keep_their_ranges_exactly():
    """Only a limit under the declared top moves it (a committed fit's search stays as it was)."""
    bounded = {p.path: p for p in within_the_peak("h100-sxm", DEFAULT_PARAMETERS)}
    changed = [p.path for p in DEFAULT_PARAMETERS if bounded[p.path] != p]
    assert changed == ["matrix_unit.efficiency"]
