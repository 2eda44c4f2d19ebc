"""All-to-all, send/recv, collective-permute, broadcast and the extra all-reduce
algorithms against their closed forms on an ideal switch (100 GB/s per GPU)."""

import math

import pytest

from accelsim.network import simulate_collective

GB = 1e9
S = 2**30
PS = 1e-12


def test_all_to_all_sends_n_minus_1_over_n(ideal_node):
    r = simulate_collective(ideal_node(), "all-to-all", S)
    assert r.latency_s == pytest.approx(7 / 8 * S / (100 * GB), abs=4 * PS)
    assert r.busbw_bytes_per_s == pytest.approx(100 * GB, rel=1e-9)


def test_send_recv_is_one_hop(ideal_node):
    topo = ideal_node(hop_latency_s=1e-6, switch_latency_s=0.5e-6)
    r = simulate_collective(topo, "send-recv", S, group=[2, 5])
    assert r.latency_s == pytest.approx(1.5e-6 + S / (100 * GB), abs=4 * PS)


def test_collective_permute_pairs_into_one_rank_share_its_downlink(ideal_node):
    from accelsim.network.collectives import Request
    from accelsim.network.simulate import plan_for, run_plans

    topo = ideal_node()
    shift = run_plans(topo, [plan_for(topo, Request(kind="collective-permute", size_bytes=S, ranks=tuple(range(8))))])
    fan_in = run_plans(topo, [plan_for(topo, Request(kind="collective-permute", size_bytes=S, ranks=(0, 1, 2),
                                                     pairs=((0, 2), (1, 2))))])
    assert shift[0] * PS == pytest.approx(S / (100 * GB), abs=4 * PS)
    assert fan_in[0] == pytest.approx(2 * shift[0], rel=1e-9)


def test_broadcast_is_a_pipelined_chain(ideal_node):
    r = simulate_collective(ideal_node(), "broadcast", S)
    assert r.latency_s == pytest.approx(S / (100 * GB), abs=4 * PS)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_halving_doubling_moves_what_a_ring_does_in_2_log2_n_steps(ideal_node, n):
    topo = ideal_node(gpus=n, hop_latency_s=1e-6)
    r = simulate_collective(topo, "all-reduce", S, "halving-doubling")
    assert r.latency_s == pytest.approx(2 * math.log2(n) * 1e-6 + 2 * (n - 1) / n * S / (100 * GB), abs=8 * PS)


def test_two_shot_is_direct_reduce_scatter_then_all_gather(ideal_node):
    r = simulate_collective(ideal_node(hop_latency_s=1e-6), "all-reduce", S, "two-shot")
    assert r.latency_s == pytest.approx(2e-6 + 2 * 7 / 8 * S / (100 * GB), abs=4 * PS)


def test_double_binary_tree_costs_about_2_s_over_b(ideal_node):
    r = simulate_collective(ideal_node(), "all-reduce", S, "tree")
    assert r.latency_s == pytest.approx(2 * S / (100 * GB), rel=1e-6)


def test_unidirectional_ring_on_a_torus_uses_half_the_links(ideal_torus):
    topo = ideal_torus([8], [True])
    bi = simulate_collective(topo, "all-gather", S, "ring")
    uni = simulate_collective(topo, "all-gather", S, "ring-uni")
    assert uni.latency_s == pytest.approx(2 * bi.latency_s, rel=1e-9)


def test_all_to_all_on_a_wrapped_torus_is_a_quarter_of_an_all_gather(ideal_torus):
    """Scaling book (sharding.md): an all-to-all on a bidirectional ring costs 1/4 of an
    all-gather of the same array."""
    topo = ideal_torus([8], [True])
    a2a = simulate_collective(topo, "all-to-all", S)  # S per rank: the array is 8 S
    gather = simulate_collective(topo, "all-gather", 8 * S)  # (n-1)/n of the array, the book rounds to 1
    assert a2a.latency_s == pytest.approx(gather.latency_s / 4 * 8 / 7, rel=1e-9)
