"""The per-kernel clock under the power limit (``power.dvfs.boost``, ``docs/power.md``): each
kernel starts at the boost clock and runs at the clock its own modelled power leaves under the TDP.
A bf16 GEMM as dense as the one the matrix efficiency and energy were read on throttles to about
the clock that GEMM ran at (1.525 GHz at 700 W, gpu-fryer); a kernel far below the TDP keeps the
boost."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.search import split_params

ON = ["power.dvfs.boost.enabled=true"]


def _run(family_name: str, params: dict, overrides: list[str]):
    chip = load_arch("h100-sxm", overrides)
    family = get_family(family_name)
    problem, config, _ = split_params(family, params)
    return simulate_kernel(family.build(problem, family.resolve_config(problem, config, chip), chip), chip)


@pytest.fixture(scope="module")
def dense_gemm():
    """8192^3 bf16 at the published clock and with the boost on."""
    params = {"M": "8192", "N": "8192", "K": "8192", "dtype": "bf16"}
    return _run("gemm", params, []), _run("gemm", params, ON)


def test_a_dense_gemm_throttles_to_about_the_reference_clock(dense_gemm):
    _, boosted = dense_gemm
    assert boosted.power_cap_w == 700.0
    assert 1.45e9 <= boosted.throttled_clock_hz <= 1.65e9
    assert boosted.energy.average_power_w <= 700.0


def test_its_time_stays_near_the_published_configs(dense_gemm):
    """The pipe efficiency times the throttled clock is about the published 0.80 x 1.83 GHz."""
    published, boosted = dense_gemm
    assert boosted.latency_s == pytest.approx(published.latency_s, rel=0.06)


def test_a_kernel_far_below_the_tdp_keeps_the_boost_clock():
    params = {"rows": "8192", "cols": "8192"}
    published = _run("softmax", params, [])
    boosted = _run("softmax", params, ON)
    assert boosted.throttled_clock_hz is None
    assert boosted.energy.clock_hz == pytest.approx(1.98e9)
    assert boosted.energy.average_power_w < 700.0
    assert boosted.latency_s <= published.latency_s
