"""Configs whose latencies differ by less than the tie resolution rank by config order, so
float noise far below the model's accuracy never picks the winner."""

import math

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import (
    TIE_S,
    autotune,
    best_config,
    rank_key,
    split_params,
)


def test_a_picosecond_slower_earlier_config_ranks_first():
    assert rank_key(10e-6 + 2e-12, 3) < rank_key(10e-6, 5)
    assert rank_key(10e-6 + 2 * TIE_S, 3) > rank_key(10e-6, 5)
    assert rank_key(math.inf, 0) > rank_key(1.0, 99)


def test_hbm_bound_ties_go_to_the_earliest_config():
    """A large layer norm is HBM-bound for most configs: those with the same programs (warps
    apart) agree to within a few picoseconds, and the full ranking lists each such group in
    config order; the search picks the ranking's first."""
    chip = load_arch("h100-sxm")
    family = get_family("layernorm")
    params, _, _ = split_params(family, {"rows": "4096", "cols": "8192"})
    full = autotune(family, params, chip)
    space = [dict(c) for c in family.config_space(params, chip.for_family("layernorm"))]
    groups: dict[int, list[int]] = {}
    for r in full:
        groups.setdefault(rank_key(r.sim.latency_s, 0)[0], []).append(space.index(r.config))
    tied = [order for order in groups.values() if len(order) > 1]
    assert tied  # the case this test is about
    assert all(order == sorted(order) for order in tied)
    assert best_config(family, params, chip).best.config == full[0].config
