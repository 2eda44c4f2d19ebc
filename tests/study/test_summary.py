"""summary.md names where the bottleneck moves, from the bound of each run (synthetic runs)."""

from __future__ import annotations

from accelsim.study.journal import Row
from accelsim.study.plan import plan_sweep
from accelsim.study.summary import (
    grid_moves,
    pareto_front,
    random_moves,
    summary_markdown,
)
from accelsim.study.table import records

# the runs are synthetic: any chip whose `clock` a point may set (h100-sxm's boost refuses it)
SPEC = """\
base: a100-sxm4-80gb
parameters:
  hbm.bandwidth: {values: ["2 TB/s", "4 TB/s", "6 TB/s", "8 TB/s"]}
  clock: {values: ["1.5 GHz", "2 GHz"]}
workloads:
  - name: gemm 4096
    kernel: gemm
    params: {M: 4096, N: 4096, K: 4096}
pareto: {x: hbm.bandwidth, y: latency_s}
"""


def _rows(plan, bound_of, latency_of=lambda p: 1.0):
    return {(p.index, 0): Row(p.index, 0, "ok", {"latency_s": latency_of(p), "bound": bound_of(p)}) for p in plan.points}


def test_a_move_along_one_parameter_at_every_setting_of_the_other(spec_file):
    plan = plan_sweep(spec_file(SPEC))
    bw = lambda p: p.value("hbm.bandwidth").number
    recs = records(plan, _rows(plan, lambda p: "hbm" if bw(p) < 5e12 else "matrix_unit"))
    assert grid_moves(plan, recs) == [
        ("- **gemm 4096** along `hbm.bandwidth`: hbm-bound at hbm.bandwidth = 2 TB/s; "
         "turns matrix_unit-bound between 4 TB/s and 6 TB/s (at every setting of `clock`)")
    ]


def test_moves_that_differ_by_setting_are_listed_with_their_setting(spec_file):
    plan = plan_sweep(spec_file(SPEC))
    bw = lambda p: p.value("hbm.bandwidth").number
    fast = lambda p: p.value("clock").label == "2 GHz"
    recs = records(plan, _rows(plan, lambda p: "hbm" if bw(p) < (7e12 if fast(p) else 3e12) else "matrix_unit"))
    moves = grid_moves(plan, recs)
    assert "turns matrix_unit-bound between 2 TB/s and 4 TB/s (with clock=1.5 GHz)" in moves[0]
    assert "turns matrix_unit-bound between 6 TB/s and 8 TB/s (with clock=2 GHz)" in moves[1]
    # along the clock, the bound moves only at 4 and 6 TB/s
    assert any("along `clock`" in m and "hbm.bandwidth=4 TB/s; hbm.bandwidth=6 TB/s" in m for m in moves)


def test_no_move_says_so(spec_file):
    plan = plan_sweep(spec_file(SPEC))
    recs = records(plan, _rows(plan, lambda p: "hbm"))
    assert grid_moves(plan, recs) == []
    assert "The bound of every workload is the same at every point." in summary_markdown(plan, recs)


def test_random_sampling_gives_the_ranges_of_each_bound(spec_file):
    plan = plan_sweep(spec_file(SPEC.replace("pareto", "sampling: {random: {samples: 12, seed: 3}}\npareto")))
    bw = lambda p: p.value("hbm.bandwidth").number
    recs = records(plan, _rows(plan, lambda p: "hbm" if bw(p) < 5e12 else "matrix_unit"))
    line = next(m for m in random_moves(plan, recs) if "`hbm.bandwidth`" in m)
    assert "hbm at 2 TB/s .. 4 TB/s" in line and "turns matrix_unit-bound above 4 TB/s" in line


def test_pareto_front_keeps_the_non_dominated_points(spec_file):
    plan = plan_sweep(spec_file(SPEC))
    recs = records(plan, _rows(plan, lambda p: "hbm"))
    points = [(1.0, 5.0, recs[0]), (2.0, 3.0, recs[1]), (3.0, 4.0, recs[2]), (4.0, 1.0, recs[3]), (2.0, 6.0, recs[4])]
    assert [(x, y) for x, y, _ in pareto_front(points, "min", "min")] == [(1.0, 5.0), (2.0, 3.0), (4.0, 1.0)]
    assert [(x, y) for x, y, _ in pareto_front(points, "max", "min")] == [(4.0, 1.0)]


def test_runs_that_do_not_fit_are_not_on_the_pareto_front(spec_file):
    """Synthetic: the fastest runs (at 6 and 8 TB/s) do not fit the chip's memory, so the
    front is drawn from the runs that do, in the summary as in the plot."""
    plan = plan_sweep(spec_file(SPEC))
    rows = {(p.index, 0): Row(p.index, 0, "ok", {
        "latency_s": 10.0 - p.index, "bound": "hbm", "hbm_capacity_bytes": 80e9,
        "fits": p.value("hbm.bandwidth").number < 5e12}) for p in plan.points}
    text = summary_markdown(plan, records(plan, rows), [])
    front = text.split("## Pareto front")[1].split("\n\n")[1]
    assert "4 TB/s" in front
    assert "6 TB/s" not in front and "8 TB/s" not in front
