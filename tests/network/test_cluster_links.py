"""A cluster's links are made as they are asked for (network.topology.ClusterLinks), with
the names, records and order a dict of them all has, and no others."""

import pickle

import pytest

from accelsim.network.topology import Link, cluster, downlink, nic_down, nic_up, uplink

SIZES = dict(uplink_bytes_per_s=450e9, hop_latency_s=1e-6, switch_latency_s=2e-6, nic_bytes_per_s=50e9,
             fabric_latency_s=3e-6)


def every_link(nodes: int, gpus: int, nics: int) -> dict[str, Link]:
    links = {}
    for g in range(nodes * gpus):
        links[uplink(g)] = Link(name=uplink(g), bandwidth_bytes_per_s=450e9, latency_s=1e-6)
        links[downlink(g)] = Link(name=downlink(g), bandwidth_bytes_per_s=450e9, latency_s=2e-6)
    for node in range(nodes):
        for nic in range(nics):
            links[nic_up(node, nic)] = Link(name=nic_up(node, nic), bandwidth_bytes_per_s=50e9, latency_s=3e-6,
                                            scale_out=True)
            links[nic_down(node, nic)] = Link(name=nic_down(node, nic), bandwidth_bytes_per_s=50e9, latency_s=0.0,
                                              scale_out=True)
    return links


def topology(nodes: int, gpus: int, nics: int):
    return cluster(name="c", nodes=nodes, gpus_per_node=gpus, nics_per_node=nics, nvls=False, launch_s=0.0, **SIZES)


@pytest.mark.parametrize(("nodes", "gpus", "nics"), [(1, 8, 8), (3, 8, 4), (12, 4, 1)])
def test_cluster_links_are_every_link_in_order(nodes, gpus, nics):
    links = topology(nodes, gpus, nics).links
    expected = every_link(nodes, gpus, nics)
    assert list(links) == list(expected)
    assert len(links) == len(expected)
    assert all(links[name] == link for name, link in expected.items())
    assert dict(links.items()) == expected
    assert links == expected and expected == links and links == topology(nodes, gpus, nics).links
    assert links.get("gpu0->switch") == expected["gpu0->switch"] and links.get("gpu9999->switch") is None
    assert pickle.loads(pickle.dumps(links)) == links


@pytest.mark.parametrize("name", ["gpu24->switch", "switch->gpu-1", "gpu01->switch", "node3.nic0->fabric",
                                  "fabric->node0.nic4", "node0.nic0->switch", "gpu0", "", 7])
def test_names_outside_the_cluster_are_not_links(name):
    links = topology(3, 8, 4).links
    assert name not in links
    with pytest.raises(KeyError):
        links[name]


def test_a_route_crosses_made_links():
    topo = topology(100_000, 8, 8)
    route = topo.route(3, 799_999)
    assert route == ("node0.nic3->fabric", "fabric->node99999.nic7")
    assert topo.route_latency_s(route) == 3e-6
    assert len(topo.links) == 2 * 800_000 + 2 * 800_000


def test_cluster_links_copy_merge_and_reverse_over_every_link():
    links, expected = topology(3, 8, 4).links, every_link(3, 8, 4)  # nothing made yet
    assert list(reversed(links)) == list(reversed(expected))
    assert links.copy() == expected and type(links.copy()) is dict
    assert (links | {}) == expected and ({} | links) == expected


def test_cluster_links_are_read_only_and_pickle_as_the_sizes():
    links = topology(3, 8, 4).links
    for change in (lambda: links.__setitem__("gpu0->switch", None), lambda: links.pop("gpu0->switch"),
                   lambda: links.update({}), lambda: links.setdefault("x", None), links.clear, links.popitem):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert links == every_link(3, 8, 4)
    big = topology(100_000, 8, 8).links
    assert len(pickle.dumps(big)) < 1000 and pickle.loads(pickle.dumps(big)) == big
