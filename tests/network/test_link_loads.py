"""link_loads(plan): the bytes a plan puts on each link, the same rule the simulation uses."""

import pytest
import simpy

from accelsim.engine.fluid import FluidResources
from accelsim.network import link_loads, links_of, play_plan
from accelsim.network.collectives import Request, get_algorithm

S = 2**20


def _plan(topo, algorithm, kind="all-reduce", ranks=range(8)):
    return get_algorithm(algorithm)(topo, Request(kind=kind, size_bytes=S, ranks=tuple(ranks)))


def test_ring_all_reduce_loads_each_uplink_with_its_bus_bytes(ideal_node, tuning):
    topo = ideal_node(tuning=tuning(link_efficiency=0.8))
    loads = link_loads(_plan(topo, "ring/simple"))
    assert set(loads) == {f"gpu{g}->switch" for g in range(8)} | {f"switch->gpu{g}" for g in range(8)}
    assert all(v == pytest.approx(2 * 7 / 8 * S / 0.8) for v in loads.values())


def test_loads_are_what_the_simulation_carries(ideal_cluster):
    topo = ideal_cluster(nodes=2)
    for plan in (_plan(topo, "ring"), _plan(topo, "tree"), _plan(topo, "direct", kind="all-to-all")):
        env = simpy.Environment()
        pool = FluidResources(env, {n: topo.links[n].bandwidth_bytes_per_s for n in sorted(links_of(plan))})
        play_plan(env, pool, plan)
        env.run()
        carried = {k: v for k, v in pool.used.items() if v}
        assert carried.keys() == link_loads(plan).keys()
        for link, load in link_loads(plan).items():
            assert carried[link] == pytest.approx(load, rel=1e-9)


def test_a_plan_that_moves_nothing_loads_nothing():
    assert link_loads(None) == {}
