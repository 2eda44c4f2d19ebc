"""MFU and HFU are shares of the datasheet's peak: with ``power.dvfs.boost`` on (h100-sxm and
the systems built on it) kernels start at the 1.98 GHz boost clock, but the peak the step's
MFU divides by stays the one quoted at the config's 1.83 GHz ``clock``."""

from __future__ import annotations

import json

import pytest

from accelsim.arch.model import load_arch


def test_the_mfu_peak_is_the_datasheets_with_the_boost_on(cli, config):
    r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "4", "--json")
    assert r.code == 0, r.err
    chip = load_arch("dgx-h100").chip
    assert chip.clock_hz > chip.peak_clock_hz  # the boost is on
    peak = json.loads(r.out)["peak_flops_per_s"]
    assert peak == pytest.approx(989.4e12, rel=0.01)
    assert peak == chip.datasheet_matrix_flops_per_s("bf16") < chip.matrix_flops_per_s("bf16")
