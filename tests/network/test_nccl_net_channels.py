"""NCCL's ring and tree channels across nodes, as its search finds them: one per NIC on
nodes of 8 GPUs, 15 on a GB200 NVL72 rack of 72 NICs (the GPU's NVLink total, 18 x 40
GB/s, holds 15 channels at 48 GB/s), never more than MAXCHANNELS / 2 = 32."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, link_loads
from accelsim.network.collectives import Request, get_algorithm
from accelsim.network.nccl_tables import MAX_GRAPH_CHANNELS, net_graph_channels

GB = 1e9
RACKS = ["node=gb200-nvl72", "network.nics_per_node=72", "nodes=2"]


@pytest.mark.parametrize("generation, links, nic, nics, channels", [
    ("hopper", 18, 50 * GB, 8, 8),  # DGX H100: 7 fit at 48 GB/s (18 x 20.6 = 371 of NVLink), 8 at 45
    ("blackwell", 18, 50 * GB, 8, 8),  # DGX B200: NIC-bound, 8 at 48
    ("ampere", 12, 25 * GB, 8, 8),  # DGX A100 on 200 Gb/s: 8 at 24
    ("hopper", 18, 12.5 * GB, 16, 16),  # two 100 Gb/s ports per GPU: 16 at 12
    ("blackwell", 18, 50 * GB, 4, 4),  # a GB200 compute tray as a node
    ("blackwell", 18, 50 * GB, 72, 15),  # a GB200 NVL72 rack: NVLink-bound, 15 x 48 = 720
])
def test_the_search_finds_one_channel_per_nic_until_nvlink_binds(generation, links, nic, nics, channels):
    assert net_graph_channels(generation, links, nic, nics) == channels


def test_never_more_than_half_of_maxchannels():
    assert net_graph_channels("blackwell", 72, 50 * GB, 72) == MAX_GRAPH_CHANNELS == 32


def test_unknown_class_uses_every_nic():
    assert net_graph_channels(None, 18, 50 * GB, 72) is None


def _nic_links(plan):
    return {link for link, load in link_loads(plan).items() if "nic" in link and load > 0}


def test_a_gb200_rack_tree_and_ring_cross_on_15_nics():
    topo = build_topology(load_arch("b200-ib-cluster", RACKS))
    assert topo.net_channels == 15
    ranks = tuple(range(topo.ranks))
    for algorithm in ("tree/simple", "ring/simple"):
        plan = get_algorithm(algorithm)(topo, Request(kind="all-reduce", size_bytes=2**30, ranks=ranks, whole=True))
        used = _nic_links(plan)
        assert len({link for link in used if link.startswith("node0.") and link.endswith("->fabric")}) == 15


def test_a_dgx_b200_cluster_keeps_a_channel_per_nic():
    topo = build_topology(load_arch("b200-ib-cluster", ["nodes=2"]))
    assert topo.net_channels == 8
    plan = get_algorithm("tree/simple")(topo, Request(kind="all-reduce", size_bytes=2**30,
                                                      ranks=tuple(range(16)), whole=True))
    assert len({link for link in _nic_links(plan) if link.startswith("node0.") and link.endswith("->fabric")}) == 8
