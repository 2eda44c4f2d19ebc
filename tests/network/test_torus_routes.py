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
