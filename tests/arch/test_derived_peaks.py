"""``arch show --json``'s derived peaks and ridge point are the datasheet's, as ``simulate``'s
shares of the peak and ``arch list`` quote them: with ``power.dvfs.boost`` on (h100-sxm) at the
config's ``clock`` (1.83 GHz), not the 1.98 GHz boost clock kernels start at."""

import json

import pytest

from accelsim.arch.model import load_arch


def derived(cli, *argv):
    result = cli("arch", "show", *argv, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)["derived"]


def test_the_derived_peaks_are_the_datasheets_with_the_boost_on(cli):
    chip = load_arch("h100-sxm")
    assert chip.clock_hz > chip.peak_clock_hz  # the boost is on
    on = derived(cli, "h100-sxm")
    assert on["matrix_flops_per_s"]["bf16"] == pytest.approx(989.4e12, rel=0.01)
    assert on["ridge_point_flops_per_byte_bf16"] == pytest.approx(989.4e12 / chip.hbm.bandwidth_bytes_per_s, rel=0.01)
    off = derived(cli, "h100-sxm", "--set", "power.dvfs.boost.enabled=false")
    assert {k: on[k] for k in ("matrix_flops_per_s", "vector_flops_per_s", "ridge_point_flops_per_byte_bf16")} == \
        {k: off[k] for k in ("matrix_flops_per_s", "vector_flops_per_s", "ridge_point_flops_per_byte_bf16")}
