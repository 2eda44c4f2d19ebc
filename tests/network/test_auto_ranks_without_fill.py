"""``auto`` ranks algorithms as NCCL's algorithm choice does, without a Simple tree's pipeline
fill (NCCL's estimate has no such term), and then plays the fill: on 2 A3 Mega nodes (Simple
only) the tree is kept at 16 MiB although it is slower than the ring once the fill is paid."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import estimate_s, tuner_estimate_s
from accelsim.network.nccl_tables import tree_simple_channel_bytes, tree_simple_fill_s
from accelsim.network.simulate import make_request, plan_for

MIB = 2**20


@pytest.fixture(scope="module")
def a3_mega():
    return build_topology(load_arch("gcp-a3-mega", ["nodes=2"]))


def test_a_simple_tree_plan_carries_its_fill_and_a_ring_none(a3_mega):
    request = make_request(a3_mega, "all-reduce", 16 * MIB)
    tree = plan_for(a3_mega, request, "tree/simple")
    ring = plan_for(a3_mega, request, "ring/simple")
    # 8 GPUs a node and 2 nodes: 2 x (7 + 1) hops; 8 NICs, so 16 channels of 1 MiB
    assert tree.fill_s == pytest.approx(tree_simple_fill_s("hopper", 2, 16, tree_simple_channel_bytes(16 * MIB, 16, 8),
                                                           8 * MIB))
    assert tree.fill_s > 0 and ring.fill_s == 0.0
    assert tuner_estimate_s(a3_mega, tree) == pytest.approx(estimate_s(a3_mega, tree) - tree.fill_s)


def test_auto_keeps_the_tree_that_only_its_fill_makes_slower(a3_mega):
    request = make_request(a3_mega, "all-reduce", 16 * MIB)
    tree = plan_for(a3_mega, request, "tree/simple")
    ring = plan_for(a3_mega, request, "ring/simple")
    assert estimate_s(a3_mega, tree) > estimate_s(a3_mega, ring) > tuner_estimate_s(a3_mega, tree)
    chosen = simulate_collective(a3_mega, "all-reduce", 16 * MIB)
    assert (chosen.algorithm, chosen.protocol) == ("tree", "simple")
    assert chosen.latency_s == pytest.approx(simulate_collective(a3_mega, "all-reduce", 16 * MIB, "tree/simple").latency_s)


def test_nvls_tree_is_still_weighed_against_the_tree_with_its_fill():
    """NCCL rates NVLSTree from other figures than the ring and tree, so the model's whole
    times decide there: 2 B200 nodes at 256 MiB keep NVLS-tree, faster than the tree with its
    fill though slower than the tree without it."""
    topo = build_topology(load_arch("b200-ib-cluster", ["nodes=2"]))
    request = make_request(topo, "all-reduce", 256 * MIB)
    tree = plan_for(topo, request, "tree/simple")
    nvls_tree = plan_for(topo, request, "nvls-tree")
    assert tuner_estimate_s(topo, tree) < estimate_s(topo, nvls_tree) < estimate_s(topo, tree)
    assert simulate_collective(topo, "all-reduce", 256 * MIB).algorithm == "nvls-tree"
