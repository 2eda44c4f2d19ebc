"""A GPU's L2 keeps a clock of its own where the config says so
(``shared_cache.keeps_own_clock_above``, ``docs/power.md``): when DVFS or a power cap lowers the
SM clock, the L2's bandwidth holds down to that SM clock and falls in proportion below it; a chip
without it keeps the L2 in the SM clock's domain. GH100 configs carry it from Nsight Compute's L2
cycle counter on a GH200 (1.70 GHz with the SMs at 1.38 and 1.71 GHz)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.energy import at_clock
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import split_params

GH100 = ("h100-sxm", "h200-sxm", "gh200")
SM_DOMAIN = ["shared_cache.keeps_own_clock_above=5 GHz"]
"""Above any clock the chip runs at: the L2 then follows the SM clock all the way, as absent."""


def _l2(chip) -> float:
    return chip.shared_cache.bandwidth_bytes_per_s


@pytest.mark.parametrize("name", GH100)
def test_gh100_configs_give_the_l2_its_own_clock(name):
    assert load_arch(name).shared_cache.keeps_own_clock_above_hz == pytest.approx(1.38e9)


def test_the_l2_holds_its_bandwidth_down_to_that_sm_clock():
    chip = load_arch("h100-sxm")
    for clock_hz in (1.9e9, 1.5e9, 1.38e9):
        slower = at_clock(chip, clock_hz)
        assert slower.clock_hz == clock_hz
        assert _l2(slower) == pytest.approx(_l2(chip))


def test_below_it_the_l2_falls_with_the_sm_clock():
    chip = load_arch("h100-sxm")
    assert _l2(at_clock(chip, 1.0e9)) == pytest.approx(_l2(chip) * 1.0 / 1.38)


def test_a_chip_without_it_keeps_the_l2_in_the_sm_clock_domain():
    chip = load_arch("a100-sxm4-80gb")
    assert chip.shared_cache.keeps_own_clock_above_hz is None
    assert _l2(at_clock(chip, chip.clock_hz * 0.8)) == pytest.approx(_l2(chip) * 0.8)
    assert _l2(at_clock(load_arch("h100-sxm", SM_DOMAIN), 1.5e9)) == pytest.approx(_l2(load_arch("h100-sxm")) * 1.5 / 1.98)


def test_a_throttled_l2_bound_kernel_keeps_the_l2s_rate():
    """DeepGEMM's contiguous grouped GEMM is L2-bound and throttled under the 700 W TDP: with the
    L2 on its own clock it runs faster than with the L2 slowed with the SMs."""
    family = get_family("gemm")
    problem, config, _ = split_params(family, {"M": "8192", "N": "4096", "K": "7168", "dtype": "fp8",
                                               "groups": "4", "impl": "deepgemm"})
    own, follows = load_arch("h100-sxm"), load_arch("h100-sxm", SM_DOMAIN)
    trace = family.build(problem, family.resolve_config(problem, config, own), own)
    fast, slow = simulate_kernel(trace, own), simulate_kernel(trace, follows)
    assert fast.throttled_clock_hz is not None and slow.throttled_clock_hz is not None
    assert fast.latency_s < slow.latency_s
    assert fast.full_clock_latency_s == pytest.approx(slow.full_clock_latency_s)


def test_a_value_that_is_not_a_frequency_is_refused():
    with pytest.raises(InputError) as exc:
        load_arch("h100-sxm", ["shared_cache.keeps_own_clock_above=12 GB"])
    assert exc.value.field == "shared_cache.keeps_own_clock_above"


@pytest.mark.parametrize(("chip", "refusal"), [("tpu-v4", "applies to GPUs only"), ("tpu-v5e", "no 'shared_cache' section")])
def test_a_tpu_config_refuses_it(cli, chip, refusal):
    """A TPU's CMEM is not scaled by the clock search (``engine.energy.at_clock``), so the field
    would be read and ignored there."""
    result = cli("arch", "show", chip, "--set", "shared_cache.keeps_own_clock_above=1 GHz")
    assert result.code == 2 and refusal in result.err and len(result.err.splitlines()) == 1
