"""The GEMM's quick GPU bound (families.gemm.tile_traffic_bound) is its trace's own L2
demand summed in closed form: equal to it where tiles are whole, below it where ragged
tiles, padding rows or 2-SM B shares add bytes, and so never above the trace bound.
With it, config=auto passes over configs without building them and still picks what
the full autotune does."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import latency_lower_bound_s
from accelsim.engine.programs import program_costs
from accelsim.families import get_family
from accelsim.families.gemm import tile_traffic_bound
from accelsim.families.search import autotune, best_config, fitting_space, split_params

CASES = [
    ("a100-sxm4-40gb", {"M": "4096", "N": "4096", "K": "4096"}, True),
    ("a100-sxm4-40gb", {"M": "1000", "N": "3000", "K": "777"}, False),  # ragged tiles
    ("a100-sxm4-40gb", {"M": "128", "N": "128", "K": "16384", "dtype": "fp32"}, True),  # split-K
    ("h100-sxm", {"M": "2048", "N": "4096", "K": "1024", "impl": "triton"}, True),  # clusters
    ("h100-sxm", {"M": "4096", "N": "4096", "K": "2048", "dtype": "fp8"}, True),  # cuBLAS, stream-K
    ("b200", {"M": "3000", "N": "2048", "K": "1024", "impl": "triton"}, False),  # 2-SM pairs, padding rows
]


def l2_bound_of_trace(trace, chip) -> float:
    costs = program_costs(trace, chip)
    return float(costs.cache_bytes.sum()) / (chip.shared_cache.bandwidth_bytes_per_s * chip.shared_cache.efficiency)


@pytest.mark.parametrize(("arch", "given", "whole_tiles"), CASES)
def test_tile_traffic_is_the_traces_l2_demand_and_under_the_trace_bound(arch, given, whole_tiles):
    chip = load_arch(arch).for_family("gemm")
    family = get_family("gemm")
    params, _, _ = split_params(family, given)
    checked = 0
    for config in fitting_space(family, params, chip):
        quick = family.quick_bound(params, config, chip)
        if quick == 0.0:  # a stream-K trace: no closed form
            continue
        trace = family.build(params, config, chip)
        traced = l2_bound_of_trace(trace, chip)
        assert quick == pytest.approx(tile_traffic_bound(params, config, chip), rel=0, abs=0)
        assert quick <= traced * (1 + 1e-12)
        if whole_tiles and config.get("pair", 1) == 1:
            assert quick == pytest.approx(traced, rel=1e-12)
        assert quick <= latency_lower_bound_s(trace, chip) * (1 + 1e-12)
        checked += 1
    assert checked


@pytest.mark.parametrize(("arch", "given"), [
    ("a100-sxm4-40gb", {"M": "1000", "N": "3000", "K": "777"}),
    ("b200", {"M": "3000", "N": "2048", "K": "1024", "impl": "triton"}),
])
def test_pruned_search_with_the_tile_bound_matches_the_full_search(arch, given):
    chip = load_arch(arch)
    family = get_family("gemm")
    params, _, _ = split_params(family, given)
    full = autotune(family, params, chip)
    search = best_config(family, params, chip)
    assert search.best.config == full[0].config
    assert search.best.sim.latency_s == full[0].sim.latency_s
