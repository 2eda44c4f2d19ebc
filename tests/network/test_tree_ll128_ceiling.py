"""NCCL caps tree/LL128 per channel by its own table (``perChMaxTreeLL128Bws``), lower as
the tree spans more nodes, not by the ring's LL128 ceiling."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.algorithms.tree import tree_across_nodes
from accelsim.network.nccl_tables import tree_ll128_cap_scale

MIB = 2**20


def test_scale_is_nccls_tree_over_ring_ceiling_by_node_count():
    assert tree_ll128_cap_scale("blackwell", 2) == pytest.approx(31.67 / 40.0)
    assert tree_ll128_cap_scale("blackwell", 4) == pytest.approx(20.0 / 40.0)
    assert tree_ll128_cap_scale("blackwell", 32) == tree_ll128_cap_scale("blackwell", 3)
    assert tree_ll128_cap_scale("hopper", 2) == pytest.approx(1.0)
    assert tree_ll128_cap_scale("hopper", 8) == pytest.approx(29.0 / 36.7)
    assert tree_ll128_cap_scale(None, 8) == 1.0


def test_only_ll128_caps_change():
    topo = build_topology(load_arch("b200-ib-cluster", ["nodes=4"]))
    ll128 = topo.tuning.protocols["ll128"]
    scaled = tree_across_nodes(topo, ll128, 4)
    assert scaled.max_bandwidth_per_rank_bytes_per_s == pytest.approx(ll128.max_bandwidth_per_rank_bytes_per_s / 2)
    assert tree_across_nodes(topo, topo.tuning.protocols["simple"], 4) == topo.tuning.protocols["simple"]


def test_four_node_blackwell_tree_ll128_moves_bytes_at_half_the_ring_capped_rate(monkeypatch):
    """Where the cap binds, the time a four-node tree/LL128 all-reduce adds per byte doubles
    against the same tree under the ring's LL128 ceiling."""
    import accelsim.network.algorithms.tree as tree

    topo = build_topology(load_arch("b200-ib-cluster", ["nodes=4"]))

    def per_byte_s():
        t = [simulate_collective(topo, "all-reduce", size * MIB, "tree/ll128").latency_s for size in (64, 128)]
        return (t[1] - t[0]) / (64 * MIB)

    tree_ceiling = per_byte_s()
    monkeypatch.setattr(tree, "tree_ll128_cap_scale", lambda generation, nodes: 1.0)
    assert tree_ceiling == pytest.approx(2 * per_byte_s(), rel=0.02)
