"""A tree across nodes runs on NCCL's own figures for trees, not the ring's: its latencies
(``baseLatencies`` and ``hwLatencies`` of Tree) and its LL128 ceiling per channel
(``perChMaxTreeLL128Bws``, lower as the tree spans more nodes)."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.algorithms.tree import tree_across_nodes
from accelsim.network.nccl_tables import tree_latency_scales, tree_ll128_cap_scale

MIB = 2**20


def test_scale_is_nccls_tree_over_ring_ceiling_by_node_count():
    assert tree_ll128_cap_scale("blackwell", 2) == pytest.approx(31.67 / 40.0)
    assert tree_ll128_cap_scale("blackwell", 4) == pytest.approx(20.0 / 40.0)
    assert tree_ll128_cap_scale("blackwell", 32) == tree_ll128_cap_scale("blackwell", 3)
    assert tree_ll128_cap_scale("hopper", 2) == pytest.approx(1.0)
    assert tree_ll128_cap_scale("hopper", 8) == pytest.approx(29.0 / 36.7)
    assert tree_ll128_cap_scale(None, 8) == 1.0


def test_tree_latencies_are_nccls_tree_over_ring_ratios():
    assert tree_latency_scales("ll") == pytest.approx((6.8 / 6.6, 1.0, 5.0 / 2.7))
    assert tree_latency_scales("ll128") == pytest.approx((1.0, 1.25 / 1.9, 8.5 / 4.0))
    assert tree_latency_scales("simple") == pytest.approx((1.0, 4.0 / 3.4, 1.0))


def test_only_ll128_caps_change():
    topo = build_topology(load_arch("b200-ib-cluster", ["nodes=4"]))
    ll128, simple = topo.tuning.protocols["ll128"], topo.tuning.protocols["simple"]
    assert tree_across_nodes(topo, ll128, 4).max_bandwidth_per_rank_bytes_per_s == pytest.approx(
        ll128.max_bandwidth_per_rank_bytes_per_s / 2)
    assert tree_across_nodes(topo, simple, 4).max_bandwidth_per_rank_bytes_per_s == \
        simple.max_bandwidth_per_rank_bytes_per_s


def test_a_small_two_node_tree_pays_the_trees_network_step(monkeypatch):
    """8 B on 2 nodes of 8: one network level each way (depth 1), so LL's tree costs its
    base latency's difference plus two network steps' difference over the ring's figures."""
    import accelsim.network.algorithms.tree as tree

    topo = build_topology(load_arch("b200-ib-cluster", ["nodes=2"]))
    ll = topo.tuning.protocols["ll"]
    own = simulate_collective(topo, "all-reduce", 8.0, "tree/ll").latency_s
    monkeypatch.setattr(tree, "tree_latency_scales", lambda protocol: (1.0, 1.0, 1.0))
    ring_figures = simulate_collective(topo, "all-reduce", 8.0, "tree/ll").latency_s
    base, _, net = tree_latency_scales("ll")
    expected = ll.base_latency_s * (base - 1) + 2 * ll.net_step_latency_s * (net - 1)
    assert own - ring_figures == pytest.approx(expected, rel=1e-3)


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
