"""``kernel_device_overhead``: the part of ``launch_overhead`` inside a kernel's device
interval. Absent it is none; a config that sets it passes it to those that extend it, and a
fit or what-if of the launch overhead leaves it as published."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch


def test_absent_means_none():
    assert load_arch("a100-sxm4-80gb").kernel_device_overhead_s == 0.0


def test_a_config_sets_it_and_extensions_inherit_it():
    assert load_arch("h100-sxm").kernel_device_overhead_s == pytest.approx(1.77e-6)
    assert load_arch("h200-sxm").kernel_device_overhead_s == pytest.approx(1.77e-6)


def test_the_launch_overhead_is_set_on_its_own():
    chip = load_arch("h100-sxm", overrides=["launch_overhead=1 us"])
    assert chip.launch_overhead_s == pytest.approx(1e-6)
    assert chip.kernel_device_overhead_s == pytest.approx(1.77e-6)
