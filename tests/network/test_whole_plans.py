"""Request.whole: every part of a collective planned, not one representative part.

A partial plan simulates one of a collective's identical, link-disjoint parts (one
node's share of a cluster ring, the rings through one chip of a torus). Its whole plan
must run in the same time alone, load no link more than the part's busiest, and send
from every rank of the group, so a replay can use it where other traffic meets another part.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from accelsim.network import link_loads
from accelsim.network.collectives import Request
from accelsim.network.simulate import Planner, plan_for, run_plans
from accelsim.network.topology import dcn_up, nic_up, slice_prefix, torus_link, uplink

S = 64 * 2**20


def _cases(ideal_cluster, ideal_torus, ideal_multislice, tuning):
    cl = ideal_cluster(nodes=3, gpus=4, nics=2)
    tuned = ideal_cluster(nodes=2, gpus=4, nics=4, tuning=tuning(), fabric_latency_s=2e-6)
    nvls = ideal_cluster(nodes=2, gpus=4, nics=4, tuning=tuning(), nvls=True)
    rails = ideal_cluster(nodes=4, gpus=4, nics=2)
    wrapped = ideal_torus((4, 4), (True, True))
    unlike = ideal_torus((4, 4), (True, False))
    cube = ideal_torus((4, 2, 2), (True, False, False))
    ms = ideal_multislice(slices=3)
    out = []
    for kind in ("all-reduce", "all-gather", "reduce-scatter"):
        out += [(cl, "ring", kind, range(12)), (tuned, "ring", kind, range(8)), (cl, "hierarchical", kind, range(12)),
                (wrapped, "ring", kind, range(16)), (unlike, "ring", kind, range(16)), (cube, "ring", kind, range(16)),
                (ms, "ring", kind, range(48)), (wrapped, "ring", kind, (0, 1, 4, 5))]
    out += [(cl, "tree", "all-reduce", range(12)), (tuned, "tree", "all-reduce", range(8)),
            (rails, "tree", "all-reduce", (0, 4, 8, 12)), (rails, "ring", "all-reduce", (1, 5, 9, 13)),
            (nvls, "nvls-tree", "all-reduce", range(8)), (nvls, "auto", "all-reduce", range(8)),
            (cl, "direct", "all-to-all", range(12)), (wrapped, "direct", "all-to-all", range(16)),
            (ms, "direct", "all-to-all", range(48)), (tuned, "auto", "all-to-all", range(8))]
    return out


def test_whole_plans_run_as_their_part_does(ideal_cluster, ideal_torus, ideal_multislice, tuning):
    partial = 0
    for topo, algorithm, kind, ranks in _cases(ideal_cluster, ideal_torus, ideal_multislice, tuning):
        req, planner = Request(kind=kind, size_bytes=S, ranks=tuple(ranks)), Planner(topo)
        part = planner.plan(req, algorithm)
        whole = planner.plan(dataclasses.replace(req, whole=True), algorithm)
        where = f"{topo.name} {algorithm} {kind} {list(ranks)}"
        if not part.partial:
            assert whole is part, where
            continue
        partial += 1
        assert not whole.partial and (whole.algorithm, whole.protocol) == (part.algorithm, part.protocol), where
        assert run_plans(topo, [whole]) == run_plans(topo, [part]), where
        part_loads, whole_loads = link_loads(part), link_loads(whole)
        assert len(whole_loads) > len(part_loads), where
        for link, load in part_loads.items():  # more only where other parts' streams arrive (all-to-all)
            assert whole_loads[link] >= load * (1 - 1e-12), (where, link)
        assert max(whole_loads.values()) == pytest.approx(max(part_loads.values()), rel=1e-12), where
        for r in ranks:  # every rank sends: on its own links, or its node's NIC
            assert any(name in whole_loads for name in _outgoing(topo, r)), (where, r)
        if len(ranks) == topo.ranks and topo.kind == "cluster":  # every NIC both ways
            nics = {n for n in topo.links if ".nic" in n}
            assert nics <= whole_loads.keys(), (where, sorted(nics - whole_loads.keys()))
        if len(ranks) == topo.ranks and (topo.kind != "torus" or all(topo.wraparound)) and "tree" not in algorithm:
            # the whole system: moving every rank one node / slice / chip on loads the same links as much
            # (trees have a root: not so for them)
            for shift in _shifts(topo):
                moved = {shift(link): load for link, load in whole_loads.items()}
                assert moved.keys() == whole_loads.keys(), where
                assert all(moved[k] == pytest.approx(v, rel=1e-12) for k, v in whole_loads.items()), where
    assert partial >= 25


def _shifts(topo):
    """Link renamings that move every rank by one node (cluster), slice (multislice) or
    chip along each axis (torus): symmetries of a collective over the whole system."""
    if topo.kind == "cluster":
        nodes, k = topo.ranks // topo.domain_size, topo.domain_size
        return [lambda name: re.sub(r"gpu(\d+)", lambda m: f"gpu{(int(m[1]) + k) % (nodes * k)}",
                                    re.sub(r"node(\d+)", lambda m: f"node{(int(m[1]) + 1) % nodes}", name))]
    if topo.kind == "multislice":
        slices = topo.ranks // topo.domain_size
        return [lambda name: re.sub(r"slice(\d+)", lambda m: f"slice{(int(m[1]) + 1) % slices}", name)]

    def along(axis):
        def shift(name):
            coords, rest = name.split(":", 1)
            values = [int(v) for v in coords.strip("()").split(",")]
            values[axis] = (values[axis] + 1) % topo.shape[axis]
            return f"{tuple(values)}:{rest}"
        return shift

    return [along(a) for a in range(len(topo.shape))]


def _outgoing(topo, rank: int) -> list[str]:
    if topo.kind == "cluster":
        return [uplink(rank), nic_up(*topo.nic_of(rank))]
    prefix = slice_prefix(topo.domain(rank)) if topo.kind == "multislice" else ""
    here = topo.coords(rank)
    own = [torus_link(here, a, step, prefix) for a in range(len(topo.shape)) for step in (1, -1)]
    return own + ([dcn_up(rank, topo.domain_size)] if topo.kind == "multislice" else [])


def test_a_plan_with_no_hidden_parts_is_its_own_whole(ideal_node, ideal_torus):
    planner = Planner(ideal_node())
    for algorithm, kind in (("ring", "all-reduce"), ("one-shot", "all-gather"), ("nvls", "all-reduce")):
        req = Request(kind=kind, size_bytes=S, ranks=tuple(range(8)))
        part = planner.plan(req, algorithm)
        assert not part.partial and planner.plan(dataclasses.replace(req, whole=True), algorithm) is part
    line = ideal_torus((8, 4), (True, True))  # one axis: the group is its own ring
    req = Request(kind="all-reduce", size_bytes=S, ranks=(0, 4, 8, 12, 16, 20, 24, 28))
    assert not plan_for(line, req, "ring").partial
