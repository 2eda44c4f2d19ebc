"""Concurrent collectives share links max-min fairly: overlap slows both, disjoint does not."""

import pytest

from accelsim.network.collectives import Request, get_algorithm
from accelsim.network.simulate import run_plans

S = 2**30


def _ring(topo, ranks):
    return get_algorithm("ring")(topo, Request(kind="all-reduce", size_bytes=S, ranks=tuple(ranks)))


def test_two_collectives_on_the_same_links_each_take_twice_as_long(ideal_node):
    topo = ideal_node()
    alone = run_plans(topo, [_ring(topo, range(8))])[0]
    both = run_plans(topo, [_ring(topo, range(8)), _ring(topo, range(8))])
    assert both == [pytest.approx(2 * alone, rel=1e-9)] * 2


def test_collectives_on_disjoint_gpus_do_not_slow_each_other(ideal_node):
    topo = ideal_node()
    alone = run_plans(topo, [_ring(topo, range(4))])[0]
    both = run_plans(topo, [_ring(topo, range(4)), _ring(topo, range(4, 8))])
    assert both == [alone, alone]


def test_partial_overlap_slows_only_while_shared(ideal_node):
    topo = ideal_node()
    alone = run_plans(topo, [_ring(topo, range(4))])[0]
    a, b = run_plans(topo, [_ring(topo, range(4)), _ring(topo, range(2, 6))])
    assert alone < a <= 2 * alone and alone < b <= 2 * alone


def test_torus_rings_on_different_axes_do_not_share(ideal_torus):
    topo = ideal_torus([4, 4], [True, True])
    x, y = (get_algorithm("ring")(topo, Request(kind="all-gather", size_bytes=S, ranks=tuple(range(16)))),) * 2
    alone = run_plans(topo, [x])[0]
    assert run_plans(topo, [x, y]) == [pytest.approx(2 * alone, rel=1e-6)] * 2
