"""A sweep's kernels take their shared-cache hits from a memo: the results are bit-identical
to running each point on its own (``run_given``), the memo serves points that change
bandwidth or clock, and a new L2 capacity or trace computes anew."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import chip_of
from accelsim.families.search import run_given
from accelsim.study import workloads
from accelsim.study.archs import resolve_point
from accelsim.study.workloads import SharedCacheMemo

GEMM = ("gemm", {"M": 1000, "N": 768, "K": 512, "dtype": "bf16"})
ATTENTION = ("attention", {"batch": 1, "heads": 4, "seq_q": 1024, "head_dim": 64, "causal": True})
# one fixed clock a point (the boost off): with the boost on `clock` is refused
POINTS = [[f"hbm.bandwidth={bandwidth}", f"shared_cache.capacity={capacity}", "power.dvfs.boost.enabled=false",
           f"clock={clock}"]
          for bandwidth in ("1 TB/s", "4 TB/s") for capacity in ("12.5 MB", "50 MB") for clock in ("1.2 GHz", "2 GHz")]


def chip(overrides: list[str], base: str = "h100-sxm"):
    return chip_of(resolve_point(base, overrides))


def row(sim) -> dict:
    shown = sim.result().row()
    shown.pop("sim_wall_s")
    return shown


@pytest.mark.parametrize("workload", [GEMM, ATTENTION], ids=["gemm", "attention"])
def test_memoised_hits_give_the_results_of_each_point_alone(workload, monkeypatch):
    monkeypatch.setattr(workloads, "_HITS", SharedCacheMemo())
    family_name, params = workload
    for overrides in POINTS:
        point = chip(overrides)
        memoised, _ = workloads._kernel_sim(family_name, params, point)
        alone = run_given(*workloads._kernel_params(family_name, params), point)[0].sim
        assert row(memoised) == row(alone)
    assert len(workloads._HITS._hits) == 2  # one per L2 capacity: bandwidth and clock leave the hits alone


def test_hits_are_shared_only_where_trace_and_window_agree():
    memo = SharedCacheMemo()
    family, problem, config, _ = workloads._kernel_params(*GEMM)
    small, large, faster = (chip(o) for o in (POINTS[0], POINTS[2], POINTS[1]))
    trace = family.build(problem, family.resolve_config(problem, config, small), small.for_family("gemm"))
    first = memo.hits(trace, small.for_family("gemm"))
    assert memo.hits(trace, faster.for_family("gemm")) is first
    other = memo.hits(trace, large.for_family("gemm"))
    assert other is not first
    assert not first.flags.writeable


def test_the_oldest_entry_goes_first():
    memo = SharedCacheMemo(max_entries=1)
    family, problem, config, _ = workloads._kernel_params(*GEMM)
    small, large = chip(POINTS[0]).for_family("gemm"), chip(POINTS[2]).for_family("gemm")
    trace = family.build(problem, family.resolve_config(problem, config, small), small)
    first = memo.hits(trace, small)
    memo.hits(trace, large)
    again = memo.hits(trace, small)
    assert again is not first and np.array_equal(again, first)


def test_a_chip_without_a_reuse_model_has_no_hits():
    tpu = chip([], base="tpu-v5e")
    family, problem, config, _ = workloads._kernel_params(*GEMM)
    trace = family.build(problem, family.resolve_config(problem, config, tpu), tpu.for_family("gemm"))
    assert SharedCacheMemo().hits(trace, tpu) is None
