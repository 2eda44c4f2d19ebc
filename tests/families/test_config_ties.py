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
    """A large layer norm is HBM-bound for most configs: their latencies agree to within a
    few picoseconds, and the search and the full ranking both pick the first such config."""
    chip = load_arch("h100-sxm")
    family = get_family("layernorm")
    params, _, _ = split_params(family, {"rows": "4096", "cols": "8192"})
    full = autotune(family, params, chip)
    space = [dict(c) for c in family.config_space(params, chip.for_family("layernorm"))]
    best_key = rank_key(full[0].sim.latency_s, space.index(full[0].config))
    tied = [r for r in full if rank_key(r.sim.latency_s, 0)[0] == best_key[0]]
    assert len(tied) > 1  # the case this test is about
    assert full[0].config == min((r.config for r in tied), key=space.index)
    assert best_config(family, params, chip).best.config == full[0].config
