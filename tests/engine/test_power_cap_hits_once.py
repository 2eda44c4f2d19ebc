"""A kernel replayed at a lower clock under the power cap reuses the L2 hits of its first
replay (the reuse model reads only the programs resident at once and the L2's capacity,
neither of which the clock changes): computed once, the same result."""

from __future__ import annotations

import accelsim.engine.gpu as gpu
from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.search import split_params


def _gemm(chip):
    family = get_family("gemm")
    values, given, _ = split_params(family, {"M": "4096", "N": "4096", "K": "4096"})
    return family.build(values, family.resolve_config(values, given, chip), chip)


def test_hits_once_and_the_same_step(monkeypatch):
    chip = load_arch("h100-sxm")  # the boost on: this GEMM passes 700 W at 1.98 GHz
    trace = _gemm(chip)
    fresh = simulate_kernel(trace, chip)
    assert fresh.throttled_clock_hz < chip.clock_hz  # replayed at a lower clock
    calls = []
    real = gpu.shared_cache_hits
    monkeypatch.setattr(gpu, "shared_cache_hits", lambda t, c: calls.append(c.clock_hz) or real(t, c))
    import accelsim.engine.chip as chip_module
    monkeypatch.setattr(chip_module, "shared_cache_hits", gpu.shared_cache_hits)
    again = simulate_kernel(trace, chip)
    assert calls == [chip.clock_hz]
    assert again.latency_s == fresh.latency_s and again.throttled_clock_hz == fresh.throttled_clock_hz
