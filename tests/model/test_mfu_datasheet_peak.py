"""MFU and HFU divide by the datasheet's peak (the config's ``clock``), not by the boost
clock the kernels run at: 989.4 TFLOP/s bf16 on an H100, where 1.98 GHz would give 1071."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("boost", ["true", "false"])
def test_peak_is_the_datasheets(cli, config, boost):
    r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2", "--json",
            "--set", f"chip.power.dvfs.boost.enabled={boost}")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["peak_flops_per_s"] == pytest.approx(132 * 4096 * 1.83e9)
