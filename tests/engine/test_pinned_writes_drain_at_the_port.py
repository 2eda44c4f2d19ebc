"""A persistent kernel's exposed epilogue drains its stores at the SM's share of HBM (every SM
stores at once), but writes pinned in the L2 (``level: shared_cache``: stream-K's and split-K's
partial accumulators) are not HBM's to take: they drain at the port's rate. Until 2026-12-07
they waited for HBM too, and a 1024^3 GEMM split four ways ran 198.8 us on an H100 with its
HBM at 0.1 TB/s, against 111.1 us unsplit."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import program_costs
from accelsim.families import get_family
from accelsim.families.search import run_config, split_params

GEMM = get_family("gemm")
SHAPE = {"M": "1024", "N": "1024", "K": "1024", "dtype": "bf16", "impl": "cublas"}
COOPERATIVE = {"block_m": "128", "block_n": "256", "schedule": "cooperative"}


@pytest.fixture(scope="module")
def slow_hbm():
    return load_arch("h100-sxm", overrides=["hbm.bandwidth=0.1 TB/s"]).for_family("gemm")


def run(chip, split: int):
    params = split_params(GEMM, SHAPE)[0]
    return run_config(GEMM, params, GEMM.resolve_config(params, {**COOPERATIVE, "split_k": str(split)}, chip), chip)


def test_a_partial_accumulator_is_counted_as_a_drain_to_the_l2(slow_hbm):
    costs = program_costs(run(slow_hbm, 4).trace, slow_hbm)
    partial = costs.drain_cache_bytes > 0
    assert partial.any() and np.all(costs.drain_cache_bytes[partial] == costs.drain_bytes[partial])
    assert np.all(costs.drain_cache_bytes[~partial] == 0)  # a tile's last unit stores C to HBM


def test_a_split_gemm_on_a_slow_hbm_is_held_up_by_its_reads_not_its_partials(slow_hbm):
    split, whole = run(slow_hbm, 4).sim, run(slow_hbm, 1).sim
    assert split.bound == "hbm"
    assert split.latency_s <= whole.latency_s
