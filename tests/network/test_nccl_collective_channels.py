"""NCCL runs a small ring or tree on few channels (``nccl_tables.collective_channels``, its
``topoGetAlgoInfo`` loop), and a node that states ``collectives.channel_bandwidth`` sends
no faster than those channels move (``collectives.on_channels``); a node that states none
is unchanged."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import MAX_GRAPH_CHANNELS, MAX_THREADS, THREAD_THRESHOLD_BYTES, collective_channels

KIB = 2**10
RATE = 36.6e9


def _nccl_loop(algorithm, protocol, nbytes, ranks, channels=MAX_GRAPH_CHANNELS):
    """src/enqueue.cc @ v2.26.2-1, ``topoGetAlgoInfo``, ring/tree branch, as written there."""
    threshold = THREAD_THRESHOLD_BYTES[protocol] * (ranks if (algorithm, protocol) == ("ring", "ll") else 1)
    nc, nt = channels, MAX_THREADS[protocol]
    while nbytes < nc * nt * threshold:
        if nc >= 2:
            nc -= 1
        else:
            break
    return nc


@pytest.mark.parametrize("algorithm", ["ring", "tree"])
@pytest.mark.parametrize("protocol", ["ll", "ll128", "simple"])
@pytest.mark.parametrize("ranks", [2, 8, 16])
def test_the_count_is_nccls_loop(algorithm, protocol, ranks):
    for nbytes in [8, 4 * KIB - 1, 4 * KIB, 5 * KIB, 32 * KIB, 96 * KIB, 1 << 20, 1 << 30]:
        assert collective_channels(algorithm, protocol, nbytes, ranks) == _nccl_loop(algorithm, protocol, nbytes, ranks)


def test_ring_ll_adds_a_channel_per_32_kib_on_8_ranks():
    counts = [collective_channels("ring", "ll", s * KIB, 8) for s in (1, 16, 32, 63, 64, 128, 512)]
    assert counts == [1, 1, 1, 1, 2, 4, 16]
    assert collective_channels("ring", "ll", 1 << 30, 8) == MAX_GRAPH_CHANNELS
    assert collective_channels("tree", "ll", 16 * KIB, 16) == 4  # a tree's threshold is not per rank


def _time_s(size, rate=None):
    sets = [] if rate is None else [f"collectives.channel_bandwidth={rate} B/s"]
    topo = build_topology(load_arch("dgx-h100", sets))
    return simulate_collective(topo, "all-reduce", size, "ring/ll").latency_s


def test_one_channel_moves_a_small_ring_at_its_rate():
    size = 16 * KIB  # one channel: the rank's bus bytes at the channel's LL payload rate
    one_channel_s = 2 * 7 / 8 * size / (RATE * 0.5)
    links_s = _time_s(size) - _time_s(8)  # what the links alone took
    added = _time_s(size, RATE) - _time_s(size)
    assert one_channel_s - links_s - 1e-9 <= added <= one_channel_s + 1e-9
    assert added > 0.5 * one_channel_s


def test_per_channel_bytes_stay_flat_while_channels_grow():
    # 32 to 128 KiB: 1, 2, 4 channels of 32 KiB each, so the channels' time stays the same
    times = [_time_s(s * KIB, RATE) - _time_s(8, RATE) for s in (32, 64, 128)]
    assert max(times) - min(times) < 0.15 * times[0]
    assert _time_s(16 * KIB, RATE) - _time_s(8, RATE) < 0.6 * times[0]  # below 32 KiB it grows with the size


def test_large_messages_and_nodes_without_the_figure_are_unchanged():
    assert _time_s(1 << 30, RATE) == pytest.approx(_time_s(1 << 30), rel=1e-9)
    assert load_arch("dgx-h100").collectives.channel_bytes_per_s is None
