"""Collectives over any group of ranks on a torus: rows, planes and sub-boxes ride the
per-axis rings; other groups get one ring in group order; plan_for works for all."""

import pytest

from accelsim.errors import InputError
from accelsim.network import make_request, plan_for, simulate_collective
from accelsim.network.collectives import Request, get_algorithm

GB = 1e9
S = 2**30
PS = 1e-12


def test_a_row_of_a_2d_torus_is_a_1d_ring(ideal_torus):
    row = ideal_torus([8, 8], [True, True]).axis_rings(1)[3]
    r = simulate_collective(ideal_torus([8, 8], [True, True]), "all-gather", S, group=row)
    alone = simulate_collective(ideal_torus([8], [True]), "all-gather", S)
    assert r.algorithm == "torus-ring"
    assert r.latency_s == pytest.approx(alone.latency_s, rel=1e-9)


def test_a_plane_of_a_3d_torus_uses_its_two_axes(ideal_torus):
    topo = ideal_torus([4, 4, 4], [True, True, True])
    plane = [topo.rank_of((x, y, 2)) for x in range(4) for y in range(4)]
    r = simulate_collective(topo, "all-gather", S, group=plane)
    expected = simulate_collective(ideal_torus([4, 4], [True, True]), "all-gather", S)
    assert r.latency_s == pytest.approx(expected.latency_s, rel=1e-9)


def test_half_an_axis_does_not_close_and_takes_twice_as_long(ideal_torus):
    topo = ideal_torus([8], [True])
    half = simulate_collective(topo, "all-gather", S, group=[0, 1, 2, 3])
    line = simulate_collective(ideal_torus([4], [False]), "all-gather", S)
    ring = simulate_collective(ideal_torus([4], [True]), "all-gather", S)
    assert half.latency_s == pytest.approx(line.latency_s, rel=1e-9)
    assert half.latency_s == pytest.approx(2 * ring.latency_s, rel=1e-9)


def test_a_group_that_is_not_a_box_gets_one_ring_in_group_order(ideal_torus):
    topo = ideal_torus([4, 4], [True, True])
    r = simulate_collective(topo, "all-reduce", S, group=[0, 1, 5, 6, 11])
    assert r.algorithm == "ring"
    with pytest.raises(InputError, match="box"):
        from accelsim.network.algorithms.torus import torus_ring

        torus_ring(topo, Request(kind="all-reduce", size_bytes=S, ranks=(0, 1, 5, 6, 11)))


@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast",
                                  "collective-permute"])
def test_plan_for_takes_any_group_on_a_torus(ideal_torus, kind):
    topo = ideal_torus([4, 4, 4], [True, False, True])
    for group in ([3, 17], list(range(0, 64, 4)), [5, 9, 40, 63, 22]):
        plan = plan_for(topo, make_request(topo, kind, 2**20, group=group))
        assert plan.lanes


def test_every_other_chip_of_an_axis_is_a_ring_of_two_hop_steps(ideal_torus):
    """Each stream crosses two links, but no link carries two streams: the same bandwidth
    time as a 4-ring, and twice its per-step latency."""
    sparse_topo = ideal_torus([8], [True], hop_latency_s=1e-6)
    dense_topo = ideal_torus([4], [True], hop_latency_s=1e-6)
    sparse = simulate_collective(sparse_topo, "all-gather", S, group=[0, 2, 4, 6]).latency_s
    dense = simulate_collective(dense_topo, "all-gather", S).latency_s
    assert sparse - dense == pytest.approx(2 * 1e-6, abs=1e-9)


def test_torus_ring_per_hop_latency_is_half_the_axis_on_a_closed_ring(ideal_torus):
    """Scaling book: a bidirectional all-gather over a wrapped axis takes |X| / 2 hops."""
    topo = ideal_torus([8], [True], hop_latency_s=1e-6)
    assert simulate_collective(topo, "all-gather", 8).latency_s == pytest.approx(4e-6, abs=1e-9)
    line = ideal_torus([8], [False], hop_latency_s=1e-6)
    assert simulate_collective(line, "all-gather", 8).latency_s == pytest.approx(7e-6, abs=1e-9)


def test_ring_algorithm_names_resolve_on_tori(ideal_torus):
    topo = ideal_torus([4, 4], [True, True])
    req = Request(kind="all-gather", size_bytes=S, ranks=tuple(range(16)))
    assert get_algorithm("ring")(topo, req).algorithm == "torus-ring"
    assert get_algorithm("ring-uni")(topo, req).algorithm == "ring-uni"


def test_a_part_of_a_wrapped_axis_straddling_its_end_is_a_line(ideal_torus):
    """Chips 6, 7, 0, 1 of a wrapped 8-ring: the ring's hop from 1 back to 6 runs along
    the line, so it pays a line's m - 1 steps, not a closed ring's m / 2."""
    topo = ideal_torus([8], [True], hop_latency_s=1e-6)
    straddling = simulate_collective(topo, "all-gather", S, group=[6, 7, 0, 1]).latency_s
    line = simulate_collective(ideal_torus([4], [False], hop_latency_s=1e-6), "all-gather", S).latency_s
    assert straddling == pytest.approx(line, abs=PS)


@pytest.mark.parametrize("shape, wrap", [((4, 4, 8), (True, True, True)), ((4, 4, 4), (True, False, False))])
def test_unlike_axes_never_split_worse_than_equal_parts(ideal_torus, shape, wrap):
    """The split search over tenths missed thirds: a 4x4x8 slice's 1 GiB all-reduce took
    13% longer than equal parts, and wrapping one axis of a 4x4x4 box made it 47% slower."""
    from accelsim.network.algorithms.torus import _split_plan
    from accelsim.network.groups import box
    from accelsim.network.simulate import run_plans

    topo = ideal_torus(shape, wrap)
    req = Request(kind="all-reduce", size_bytes=2**30, ranks=tuple(range(topo.ranks)))
    spans = box(topo, req.ranks)
    equal = run_plans(topo, [_split_plan(topo, spans, req, [0, 1, 2], [1 / 3] * 3, None)])[0]
    searched = run_plans(topo, [plan_for(topo, req, "ring")])[0]
    assert searched <= equal
