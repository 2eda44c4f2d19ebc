"""NCCL_MIN_NCHANNELS (a cluster's ``network.nccl_min_channels``): the communicator copies
its channels up to that many, and LL128, whose rate NCCL states per channel
(``perChMaxRingLL128Bws``), runs on all of them; without it LL128's cap across nodes
takes the channels NCCL's search finds there."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import (
    LL128_CHANNELS, MAX_CHANNELS, communicator_channels, ll128_channel_scale, tree_simple_channel_bytes,
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


def test_simple_and_one_node_are_unchanged():
    assert _busbw(["nodes=2", "network.nccl_min_channels=32"], "ring/simple") == pytest.approx(
        _busbw(["nodes=2"], "ring/simple"))
    one = load_arch("h100-ib-cluster", ["network.nccl_min_channels=32"])
    topo = build_topology(one)
    inside = simulate_collective(topo, "all-reduce", GIB, "ring/ll128", ranks=8)
    plain = simulate_collective(build_topology(load_arch("h100-ib-cluster")), "all-reduce", GIB, "ring/ll128", ranks=8)
    assert inside.latency_s == plain.latency_s


def test_more_channels_give_a_simple_tree_smaller_chunks_per_channel():
    assert tree_simple_channel_bytes(GIB, 16, 8, 32) == pytest.approx(GIB / 32)
    assert tree_simple_channel_bytes(GIB, 16, 8) == pytest.approx(GIB / 16)


@pytest.mark.parametrize("value", ["0", "65"])
def test_a_channel_count_out_of_range_is_refused(value):
    with pytest.raises(InputError, match="nccl_min_channels"):
        load_arch("h100-ib-cluster", [f"network.nccl_min_channels={value}"])
