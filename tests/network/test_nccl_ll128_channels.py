"""LL128's per-rank cap on the channels of NCCL's ring graph: NCCL rates ring/LL128 at
``nChannels x perChMaxRingLL128Bws``, so the configs' cap (that figure x 8 channels) takes
the graph's own count, on one node (12 on DGX A100 and H100, 16 on B200) and across nodes
(the search over the NICs, duplicated as ``ncclTopoDupChannels`` does), or what
``NCCL_MIN_NCHANNELS`` (a cluster's ``network.nccl_min_channels``) forces."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import on_searched_channels
from accelsim.network.nccl_tables import (
    GENERATIONS, LL128_CHANNELS, MAX_CHANNELS, communicator_channels, dup_channels, ll128_channel_scale, ring_graph,
    tree_simple_channel_bytes,
)

GIB = 2**30


def _busbw(overrides, algorithm="ring/ll128", size=8 * GIB):
    topo = build_topology(load_arch("h100-ib-cluster", list(overrides)))
    return simulate_collective(topo, "all-reduce", size, algorithm).busbw_bytes_per_s


def test_the_communicator_runs_the_search_twice_or_the_forced_count():
    assert communicator_channels(8) == 16
    assert communicator_channels(8, 32) == 32
    assert communicator_channels(8, 4) == 16  # a minimum never lowers it
    assert communicator_channels(32, 100) == MAX_CHANNELS


def test_ll128_cap_follows_the_searched_channels_or_half_the_forced_ones():
    assert ll128_channel_scale(LL128_CHANNELS) == 1.0  # 8-NIC nodes: the configs' estimate
    assert ll128_channel_scale(15) == pytest.approx(15 / 8)  # a GB200 rack's 15 channels
    assert ll128_channel_scale(8, 32) == pytest.approx(2.0)  # 32 run = 16 searched channels' worth
    assert ll128_channel_scale(8, 8) == 1.0
    assert ll128_channel_scale(None, 32) == 1.0  # search not known: the config's cap as it is


def test_forcing_channels_lifts_a_128_node_ll128_ring_to_its_nics():
    default = _busbw(["nodes=128"])
    forced = _busbw(["nodes=128", "network.nccl_min_channels=32"])
    nic_limit = 8 * 50e9 * 120 / 128  # 8 x 400 Gb/s per node at LL128's payload share
    assert default < 0.8 * nic_limit  # bound by 8 channels of 36.7 GB/s
    assert 0.9 * nic_limit < forced <= nic_limit * (1 + 1e-9)


def test_simple_is_unchanged_by_a_forced_channel_count():
    assert _busbw(["nodes=2", "network.nccl_min_channels=32"], "ring/simple") == pytest.approx(
        _busbw(["nodes=2"], "ring/simple"))


@pytest.mark.parametrize("node, channels", [("dgx-a100", 12), ("dgx-h100", 12), ("dgx-b200", 16)])
def test_one_node_ll128_cap_is_the_ring_graphs_channels(node, channels):
    topo = build_topology(load_arch(node))
    ll128 = topo.tuning.protocols["ll128"]
    per_channel = GENERATIONS[topo.tuning.generation].ll128_channel_bytes_per_s
    assert ring_graph(topo.tuning.generation, topo.nvlink_links)[0] == channels
    assert on_searched_channels(topo, ll128, across=False).max_bandwidth_per_rank_bytes_per_s == pytest.approx(
        channels * per_channel)


def test_a_one_node_ll128_ring_is_played_with_that_cap():
    topo = build_topology(load_arch("dgx-a100"))
    result = simulate_collective(topo, "all-reduce", 64 * 2**20, "ring/ll128")
    assert result.busbw_bytes_per_s > 160e9  # the configs' 8-channel estimate would cap it there


def test_duplication_follows_ncclTopoDupChannels():
    assert dup_channels("ampere", 6, 40e9) == (12, 20e9)  # DGX A100's ring
    assert dup_channels("ampere", 8, 24e9) == (8, 24e9)  # below 25 GB/s
    assert dup_channels("hopper", 8, 45e9) == (8, 45e9)  # past Ampere, more than 4 below 50 GB/s
    assert dup_channels("blackwell", 4, 48e9) == (8, 24e9)  # a GB200 tray over its 4 NICs
    assert dup_channels("blackwell", 20, 90e9) == (32, 45e9)  # at most MAXCHANNELS / 2


def test_more_channels_give_a_simple_tree_smaller_chunks_per_channel():
    assert tree_simple_channel_bytes(GIB, 16, 8, 32) == pytest.approx(GIB / 32)
    assert tree_simple_channel_bytes(GIB, 16, 8) == pytest.approx(GIB / 16)


@pytest.mark.parametrize("value", ["0", "65"])
def test_a_channel_count_out_of_range_is_refused(value):
    with pytest.raises(InputError, match="nccl_min_channels"):
        load_arch("h100-ib-cluster", [f"network.nccl_min_channels={value}"])
