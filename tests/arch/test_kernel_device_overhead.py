"""``kernel_device_overhead``: the part of ``launch_overhead`` inside a kernel's device
interval. Absent it is none; it cannot exceed the launch it is part of."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError


def test_absent_means_none():
    assert load_arch("a100-sxm4-80gb").kernel_device_overhead_s == 0.0


def test_a_config_sets_it_and_extensions_inherit_it():
    assert load_arch("h100-sxm").kernel_device_overhead_s == pytest.approx(1.77e-6)
    assert load_arch("h200-sxm").kernel_device_overhead_s == pytest.approx(1.77e-6)


def test_more_than_the_launch_is_refused():
    with pytest.raises(InputError, match="kernel_device_overhead: expected from 0 to launch_overhead"):
        load_arch("h100-sxm", overrides=["kernel_device_overhead=4 us"])
