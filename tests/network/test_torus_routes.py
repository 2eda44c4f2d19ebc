"""Torus and DCN routes: dimension-ordered hops, each link named as the topology names it.
The topology looks names up in tables made once; these are the routes formatted hop by
hop, as written out below."""

import itertools
import random

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology
from accelsim.network.topology import coords_of, dcn_down, dcn_up, slice_prefix, torus_link


def hop_by_hop(topo, src, dst):
    size = topo.domain_size
    if src // size != dst // size:
        return (dcn_up(src, size), dcn_down(dst, size))
    prefix = slice_prefix(src // size) if topo.kind == "multislice" else ""
    here = list(coords_of(src % size, topo.shape))
    path = []
    for axis, step, hops in topo.torus_hops(src, dst):
        for _ in range(hops):
            path.append(torus_link(tuple(here), axis, step, prefix))
            here[axis] = (here[axis] + step) % topo.shape[axis]
    return tuple(path)


@pytest.mark.parametrize(("system", "overrides"), [
    ("tpu-v5e-4x4", ()),
    ("tpu-v5e-4x4", ("wraparound=[false, true]",)),
    ("tpu-v5p-4x4x4", ()),
    ("tpu-v5p-4x4x4", ("wraparound=[true, false, false]",)),
])
def test_every_route_of_a_small_torus(system, overrides):
    topo = build_topology(load_arch(system, overrides))
    for src, dst in itertools.product(range(topo.ranks), repeat=2):
        route = topo.route(src, dst)
        assert route == hop_by_hop(topo, src, dst)
        assert all(name in topo.links for name in route)


def test_sampled_routes_of_a_multislice():
    topo = build_topology(load_arch("tpu-v5p-8x8x8-x2"))
    rng = random.Random(0)
    pairs = [(rng.randrange(topo.ranks), rng.randrange(topo.ranks)) for _ in range(3000)]
    for src, dst in pairs:
        route = topo.route(src, dst)
        assert route == hop_by_hop(topo, src, dst)
        assert all(name in topo.links for name in route)
    assert any(src // topo.domain_size != dst // topo.domain_size for src, dst in pairs)


def test_half_way_round_a_wrapped_axis_goes_half_each_way(ideal_torus):
    topo = ideal_torus((4, 4), (True, True))
    (first, plus), (second, minus) = topo.routes(0, 2)  # two hops either way along axis 1
    assert first == second == 0.5
    assert plus == ("(0, 0):axis1+", "(0, 1):axis1+") and minus == ("(0, 0):axis1-", "(0, 3):axis1-")
    assert len(topo.routes(0, 10)) == 4 and sum(share for share, _ in topo.routes(0, 10)) == 1.0
    assert topo.routes(0, 1) == ((1.0, topo.route(0, 1)),)  # the short way is one way
    assert ideal_torus((4, 4), (False, False)).routes(0, 2) == ((1.0, ("(0, 0):axis1+", "(0, 1):axis1+")),)


@pytest.mark.parametrize("algorithm, kind, group", [
    ("tree", "all-reduce", range(4)), ("one-shot", "all-reduce", range(4)), ("two-shot", "all-reduce", range(4)),
    ("direct", "all-to-all", (5, 6, 7, 9, 10, 11, 13, 14, 15)), ("direct", "all-to-all", range(16)),
])
def test_a_wraparound_never_slows_a_collective(ideal_torus, algorithm, kind, group):
    """With ties always the + way, wrapping a 4-chip axis made a tree all-reduce 1.5x slower."""
    from accelsim.network import simulate_collective

    times = [simulate_collective(ideal_torus((4, 4), wrap), kind, 2**26, algorithm, group=list(group)).latency_s
             for wrap in ((False, False), (False, True), (True, True))]
    assert times[1] <= times[0] * (1 + 1e-9) and times[2] <= times[1] * (1 + 1e-9), times
