"""Torus rings on boxes whose axes differ: an all-gather moves what a reduce-scatter
does over the same links, time-reversed, so it takes the same time, and an all-reduce
is never slower than the two one after the other (a barrier between them is a valid
schedule). Boxes whose axes are alike keep their equal parts, untouched."""

from __future__ import annotations

import dataclasses

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, make_request, plan_for, simulate_collective
from accelsim.network.algorithms.torus import _best_shares, _split_plan
from accelsim.network.groups import box
from accelsim.network.simulate import run_plans

KINDS = ("reduce-scatter", "all-gather", "all-reduce")
PS = 1e-12

UNLIKE = {  # the audit's boxes (the all-gather 10% slower, the all-reduce 5% over the two), and 2D ones
    "4x4x4 wrapped on two axes": ("tpu-v5p-4x4x4", ("wraparound=[true,true,false]",), None, 2**30),
    "4x4x8": ("tpu-v5p-4x4x8", (), None, 2**28),
    "4x4 wrapped on one axis": ("tpu-v5e-4x4", ("wraparound=[true,false]",), None, 2**30),
    "16x4 of a 16x16 (a ring and a line)": ("tpu-v5e-16x16", (), (16, 4), 2**30),
}
ALIKE = {"tpu-v5e-16x16": (16, 16), "tpu-v5p-4x4x4": (4, 4, 4)}


@pytest.fixture(scope="module")
def unlike_times():
    """Each unlike case's time per kind, planned on one topology (its plans cached)."""
    times = {}
    for name, (system, overrides, sub_box, size) in UNLIKE.items():
        topo = build_topology(load_arch(system, overrides))
        group = _sub_box(topo, sub_box)
        times[name] = {kind: simulate_collective(topo, kind, size, group=group).latency_s for kind in KINDS}
    return times


def _sub_box(topo, extent):
    """The ranks of the box from the origin with ``extent`` chips per axis (None: all)."""
    if extent is None:
        return None
    return [r for r in range(topo.ranks) if all(c < e for c, e in zip(topo.coords(r), extent))]


@pytest.mark.parametrize("case", UNLIKE)
def test_all_gather_takes_the_reduce_scatters_time(unlike_times, case):
    times = unlike_times[case]
    assert times["all-gather"] == pytest.approx(times["reduce-scatter"], rel=5e-3)


@pytest.mark.parametrize("case", UNLIKE)
def test_all_reduce_is_no_slower_than_reduce_scatter_then_all_gather(unlike_times, case):
    times = unlike_times[case]
    assert times["all-reduce"] <= times["reduce-scatter"] + times["all-gather"] + PS


@pytest.fixture(scope="module")
def half_wrapped():
    """A 4x4x4 box wrapped on two axes, its plans cached across the tests that use it."""
    return build_topology(load_arch("tpu-v5p-4x4x4", ["wraparound=[true,true,false]"]))


@pytest.mark.parametrize("kind", KINDS)
def test_no_kind_is_slower_than_its_own_searched_split(half_wrapped, kind):
    """The searched split is what each kind ran before the reverse and the barrier were tried."""
    topo = half_wrapped
    req = make_request(topo, kind, 2**28)
    spans, axes = box(topo, req.ranks), [0, 1, 2]
    searched = _split_plan(topo, spans, req, axes, _best_shares(topo, spans, req, axes, None), None)
    assert run_plans(topo, [plan_for(topo, req)]) <= run_plans(topo, [searched])


@pytest.mark.parametrize("system", ALIKE)
@pytest.mark.parametrize("size", [2**10, 2**20, 2**30])
def test_alike_axes_keep_equal_parts_started_together(system, size):
    topo = build_topology(load_arch(system))
    axes = list(range(len(ALIKE[system])))
    for kind in KINDS:
        req = make_request(topo, kind, size)
        equal = _split_plan(topo, box(topo, req.ranks), req, axes, [1 / len(axes)] * len(axes), None)
        assert plan_for(topo, req) == equal, kind


def test_unlike_axes_plan_the_same_every_time():
    def times():
        topo = build_topology(load_arch("tpu-v5e-16x16"))
        return [simulate_collective(topo, kind, 2**30, group=_sub_box(topo, (16, 4))) for kind in KINDS]

    assert times() == times()


@pytest.mark.parametrize("kind", ["all-gather", "all-reduce"])
def test_whole_plans_of_unlike_axes_take_the_representatives_time(half_wrapped, kind):
    """The reversed and barrier plans wait by lane; every ring through the box waits alike."""
    topo = half_wrapped
    req = make_request(topo, kind, 2**28)
    part, whole = plan_for(topo, req), plan_for(topo, dataclasses.replace(req, whole=True))
    assert part.partial and not whole.partial
    assert run_plans(topo, [whole]) == run_plans(topo, [part])
