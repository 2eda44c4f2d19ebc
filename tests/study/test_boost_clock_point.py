"""A sweep point's ``clock`` on a chip with ``power.dvfs.boost`` on is refused as ``--set`` refuses
it (there ``clock`` is the clock the matrix efficiency was quoted at: a point would rescale the
pipe's efficiency and leave kernels at the boost clock); with the boost off it is one fixed clock."""

import pytest

from accelsim.arch.loader import OverrideError
from accelsim.study.archs import resolve_point


def test_a_clock_point_on_a_boosted_chip_is_refused_in_one_line():
    with pytest.raises(OverrideError) as caught:
        resolve_point("h100-sxm", ["clock=1.2 GHz"])
    assert caught.value.field == "clock" and "power.dvfs.boost.enabled=false" in caught.value.message


def test_the_clock_what_ifs_of_a_boosted_chip():
    assert resolve_point("h100-sxm", ["power.dvfs.boost.enabled=false", "clock=1.2 GHz"]).clock_hz == pytest.approx(1.2e9)
    assert resolve_point("h100-sxm", ["power.dvfs.boost.clock=1.2 GHz"]).clock_hz == pytest.approx(1.2e9)
    assert resolve_point("b200", ["clock=1.2 GHz"]).clock_hz == pytest.approx(1.2e9)  # no boost section
