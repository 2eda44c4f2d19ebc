"""Clusters: NVSwitch nodes joined by NICs on a non-blocking fabric."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import Request, get_algorithm
from accelsim.network.simulate import run_plans

GB = 1e9
S = 2**30
PS = 1e-12


def test_gpus_of_a_node_talk_over_nvlink_and_nodes_over_their_nics(ideal_cluster):
    topo = ideal_cluster()
    assert topo.route(0, 3) == ("gpu0->switch", "switch->gpu3")
    assert topo.route(1, 6) == ("node0.nic1->fabric", "fabric->node1.nic2")


def test_ring_across_nodes_is_limited_by_all_the_nics_of_a_node(ideal_cluster):
    """NCCL's ring leaves each node through every NIC: 4 NICs x 10 GB/s carry the ring's
    2(n-1)/n S crossing, against 100 GB/s of NVLink per GPU."""
    topo = ideal_cluster()
    r = simulate_collective(topo, "all-reduce", S, "ring")
    assert r.latency_s == pytest.approx(2 * 7 / 8 * S / (4 * 10 * GB), abs=4 * PS)


def test_fewer_nics_than_gpus_share_them(ideal_cluster):
    four = simulate_collective(ideal_cluster(nics=4), "all-reduce", S, "ring")
    two = simulate_collective(ideal_cluster(nics=2), "all-reduce", S, "ring")
    assert two.latency_s == pytest.approx(2 * four.latency_s, rel=1e-9)


def test_hierarchical_is_inner_reduce_scatter_rail_all_reduce_inner_all_gather(ideal_cluster):
    topo = ideal_cluster()
    r = simulate_collective(topo, "all-reduce", S, "hierarchical")
    inner = 3 / 4 * S / (100 * GB)  # ring reduce-scatter and all-gather over 4 GPUs on NVLink
    rail = 2 * 1 / 2 * (S / 4) / (10 * GB)  # 2-node ring per rail: both halves to the one peer, on one NIC
    assert r.latency_s == pytest.approx(2 * inner + rail, abs=8 * PS)


def test_nvls_tree_reduces_in_the_switch_and_trees_the_shards_across_nodes(ideal_cluster):
    r = simulate_collective(ideal_cluster(nvls=True), "all-reduce", S, "nvls-tree")
    switch = S / (100 * GB)  # each GPU sends the buffer up (reduce), receives it down (multicast)
    tree = (S / 4) / 2 / (10 * GB)  # 2 nodes: each tree edge carries half a GPU's shard, up then down
    # pipelined, as NCCL runs it: the stages share the links at once; a GPU's uplink carries
    # the buffer and a shard (1 + 1/4), its NIC each direction the tree's up and down halves
    assert r.latency_s == pytest.approx(max((1 + 1 / 4) * switch, 2 * tree), abs=8 * PS)


def test_tree_across_nodes_chains_inside_and_trees_across_on_every_nic(ideal_cluster):
    """One channel per NIC, each a quarter of the buffer: inside a node a chain to the
    channel's head (3 links of NVLink), across 2 nodes one tree edge per tree carrying
    half the channel's share; reduce and broadcast each take the slower of the two."""
    r = simulate_collective(ideal_cluster(), "all-reduce", S, "tree")
    nic = (S / 4) / 2 / (10 * GB)
    assert r.latency_s == pytest.approx(2 * nic, rel=1e-6)


def test_node_crossings_pay_the_fabric_latency_per_crossing_step(ideal_cluster, tuning):
    fast = simulate_collective(ideal_cluster(tuning=tuning()), "all-reduce", 1024, "ring/ll")
    slow = simulate_collective(ideal_cluster(tuning=tuning(), fabric_latency_s=1e-6), "all-reduce", 1024, "ring/ll")
    # 8 ranks over 2 nodes: 14 steps, 4 of them (2 per pass round the ring) cross a node
    assert slow.latency_s - fast.latency_s == pytest.approx(4e-6, abs=1e-9)


def test_two_rail_groups_on_one_nic_share_it(ideal_cluster):
    topo = ideal_cluster(nics=2)
    rail0 = get_algorithm("ring")(topo, Request(kind="all-reduce", size_bytes=S, ranks=(0, 4)))
    rail1 = get_algorithm("ring")(topo, Request(kind="all-reduce", size_bytes=S, ranks=(1, 5)))
    rail2 = get_algorithm("ring")(topo, Request(kind="all-reduce", size_bytes=S, ranks=(2, 6)))
    alone = run_plans(topo, [rail0])[0]
    assert run_plans(topo, [rail0, rail1]) == [pytest.approx(2 * alone, rel=1e-9)] * 2
    assert run_plans(topo, [rail0, rail2]) == [alone, alone]


def test_a_configured_cluster_builds_and_simulates():
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=4"]))
    assert (topo.kind, topo.ranks, topo.local_ranks) == ("cluster", 32, 8)
    # 4 GiB, where a Simple tree's pipeline fill (18 hops of 512 KiB, 0.5 ms) is amortised;
    # at 1 GiB the ring is as fast
    r = simulate_collective(topo, "all-reduce", 4 * S)
    nvls_tree = simulate_collective(topo, "all-reduce", 4 * S, "nvls-tree")
    # from 3 nodes NCCL rates NVLSTree no higher than 8 heads x 45.5 GB/s on Hopper
    # (perChMaxNVLSTreeBws), below what a tree over the same NICs reaches; a tree's shards
    # cross the NICs once, so bus bandwidth comes near the NICs' line rate (8 x 50 GB/s; how
    # near depends on the fitted NVLink efficiency of its chains), not past the GPUs' NVLink
    assert nvls_tree.busbw_bytes_per_s <= 8 * 45.5 * GB < r.busbw_bytes_per_s < 2 * 450 * GB
    assert r.algorithm == "tree" and r.busbw_bytes_per_s > 0.95 * 8 * 50 * GB


@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"])
def test_plan_for_takes_any_group_on_a_cluster(ideal_cluster, kind):
    from accelsim.network import make_request, plan_for

    topo = ideal_cluster(nodes=3)
    for group in ([1, 2], [0, 4, 8], [0, 1, 2, 5, 9], list(range(12))):
        assert plan_for(topo, make_request(topo, kind, 2**20, group=group)).lanes


@pytest.mark.parametrize("algorithm, nic_counts", [("ring", range(1, 9)), ("tree", (1, 2, 4, 8))])
@pytest.mark.parametrize("group", [range(16), (0, 2, 4, 6, 8, 10, 12, 14)])
def test_more_nics_never_slow_a_cross_node_collective(ideal_cluster, algorithm, nic_counts, group):
    """Each channel leaves through its own NIC: with evenly spaced exit GPUs, 5 NICs for
    8 GPUs put two channels on NIC 0 and made a 1 GiB ring 1.6x slower than 4 NICs. (A
    tree's chains load NVLink unevenly where the NICs do not divide the GPUs, its reduce
    and broadcast running at once: 7 channels over 8 GPUs is NVLink-bound 1.3% above 6.)"""
    times = []
    for nics in nic_counts:
        topo = ideal_cluster(nodes=2, gpus=8, nics=nics)
        times.append(simulate_collective(topo, "all-reduce", 2**30, algorithm, group=list(group)).latency_s)
    assert all(later <= earlier * (1 + 1e-9) for earlier, later in zip(times, times[1:])), times
    assert times[-1] < times[0]
