"""Simulated collectives on uncontended links equal their alpha-beta closed forms."""

import pytest

from accelsim.network import simulate_collective

GB = 1e9
S = 2**30
PS = 1e-12


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_all_reduce_is_2_n_minus_1_over_n_s_over_b(ideal_node, n):
    r = simulate_collective(ideal_node(gpus=n), "all-reduce", S, "ring")
    assert r.latency_s == pytest.approx(2 * (n - 1) / n * S / (100 * GB), abs=2 * PS)
    assert r.busbw_bytes_per_s == pytest.approx(100 * GB, rel=1e-9)


def test_ring_all_reduce_adds_one_hop_latency_per_step_and_a_launch(ideal_node):
    topo = ideal_node(hop_latency_s=1e-6, switch_latency_s=0.5e-6, launch_s=3e-6)
    r = simulate_collective(topo, "all-reduce", S, "ring")
    assert r.latency_s == pytest.approx(3e-6 + 14 * 1.5e-6 + 14 / 8 * S / (100 * GB), abs=2 * PS)


@pytest.mark.parametrize("kind", ["all-gather", "reduce-scatter"])
def test_ring_gather_and_scatter_move_n_minus_1_over_n(ideal_node, kind):
    r = simulate_collective(ideal_node(), kind, S, "ring")
    assert r.latency_s == pytest.approx(7 / 8 * S / (100 * GB), abs=2 * PS)
    assert r.busbw_bytes_per_s == pytest.approx(100 * GB, rel=1e-9)


def test_nvls_needs_more_than_two_gpus_in_a_node(ideal_node, ideal_cluster):
    """NCCL does not set NVLS up for 2 GPUs a node; auto took nvls-tree for rail groups
    (one GPU a node) and put traffic on NVLink that does not exist."""
    from accelsim.errors import InputError

    with pytest.raises(InputError, match="at least 3 GPUs of the group in a node"):
        simulate_collective(ideal_node(), "all-reduce", S, "nvls", ranks=2)
    topo = ideal_cluster(nvls=True)
    assert simulate_collective(topo, "all-reduce", S, group=[0, 4]).algorithm != "nvls-tree"


@pytest.mark.parametrize("n", [3, 4, 8])
def test_nvls_moves_the_buffer_and_one_shard_each_way(ideal_node, n):
    """ld_reduce: the whole buffer up, the rank's shard of the sum down; multicast st:
    the shard up, the whole buffer down. S (n+1)/n each way per GPU."""
    r = simulate_collective(ideal_node(hop_latency_s=1e-6, switch_latency_s=0.5e-6), "all-reduce", S, "nvls",
                            ranks=n)
    assert r.latency_s == pytest.approx(2 * 1.5e-6 + S * (n + 1) / n / (100 * GB), abs=2 * PS)


def test_one_shot_all_reduce_sends_the_buffer_to_every_peer(ideal_node):
    r = simulate_collective(ideal_node(), "all-reduce", S, "one-shot")
    assert r.latency_s == pytest.approx(7 * S / (100 * GB), abs=2 * PS)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_torus_axis_all_gather_is_bidirectional_ring(ideal_torus, n):
    """Scaling book: an all-gather over one wrapped axis takes (n-1)/n * S / (2 W_link)."""
    r = simulate_collective(ideal_torus([n], [True]), "all-gather", S)
    assert r.latency_s == pytest.approx((n - 1) / n * S / (2 * 50 * GB), abs=2 * PS)


def test_a_missing_wraparound_doubles_ring_time(ideal_torus):
    ring = simulate_collective(ideal_torus([8], [True]), "all-gather", S)
    line = simulate_collective(ideal_torus([8], [False]), "all-gather", S)
    assert line.latency_s == pytest.approx(2 * ring.latency_s, rel=1e-9)


@pytest.mark.parametrize("kind", ["all-reduce", "reduce-scatter", "all-gather"])
@pytest.mark.parametrize("shape", [[4, 4], [4, 4, 2]])
def test_wrapping_an_axis_never_slows_a_collective(ideal_torus, kind, shape):
    """One axis wrapped and the others not used to be slower than none wrapped (equal
    parts put the biggest phases of half the buffer on the slow lines)."""
    n = len(shape)
    times = []
    for wrapped in range(n + 1):  # the first `wrapped` axes close
        flags = [a < wrapped for a in range(n)]
        times.append(simulate_collective(ideal_torus(shape, flags), kind, S).latency_s)
    assert all(later <= earlier * (1 + 1e-9) for earlier, later in zip(times, times[1:])), times
    assert times[1] < times[0]


def test_2d_torus_all_gather_uses_both_axes_at_once(ideal_torus):
    """Half the buffer gathers along x then y, the other half y then x, concurrently:
    per axis phase the volume is 3/4 of what a rank holds after it."""
    r = simulate_collective(ideal_torus([4, 4], [True, True]), "all-gather", S)
    expected = 3 / 4 * (S / 8 + S / 2) / (2 * 50 * GB)
    assert r.latency_s == pytest.approx(expected, abs=4 * PS)


def test_2d_torus_all_reduce_is_reduce_scatter_then_all_gather(ideal_torus):
    topo = ideal_torus([4, 4], [True, True])
    ar = simulate_collective(topo, "all-reduce", S)
    rs = simulate_collective(topo, "reduce-scatter", S)
    ag = simulate_collective(topo, "all-gather", S)
    assert ar.latency_s == pytest.approx(rs.latency_s + ag.latency_s, abs=8 * PS)


def test_v5e_16x16_all_gather_reaches_four_links_of_egress():
    """JAX scaling book: a full-slice all-gather on a wrapped 2D torus runs at about
    2 axes x 2 directions x 45 GB/s per chip."""
    from accelsim.arch.model import load_arch
    from accelsim.network import build_topology

    r = simulate_collective(build_topology(load_arch("tpu-v5e-16x16")), "all-gather", 4 * S)
    assert r.busbw_bytes_per_s == pytest.approx(4 * 45 * GB, rel=0.02)
