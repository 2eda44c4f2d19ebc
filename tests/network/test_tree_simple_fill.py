"""A Simple tree across nodes pays its pipeline's fill: the last chunk crosses every hop of
the chain and the tree whole (store-and-forward at Simple's step, 512 KiB by default), at
one channel's rate (NCCL's per-channel tree ceiling over 2). LL and LL128 forward line by
line and pay no such fill."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import SIMPLE_BUFFER_BYTES, STEPS, tree_simple_channel_bytes, tree_simple_fill_s

MIB = 2**20


def test_a_full_chunk_per_hop_at_half_the_per_channel_tree_ceiling():
    chunk = SIMPLE_BUFFER_BYTES / STEPS
    assert chunk == 512 * 1024
    # 2 Hopper nodes: perChMaxTreeBws 41.4 GB/s of bus bandwidth, 20.7 of algorithm bandwidth per channel
    assert tree_simple_fill_s("hopper", 2, 16, 64 * MIB) == pytest.approx(16 * chunk / 20.7e9)
    # more than 2 Blackwell nodes: 24 GB/s; a channel's part smaller than a chunk is one chunk
    assert tree_simple_fill_s("blackwell", 20, 150, 100e3) == pytest.approx(150 * 100e3 / 12e9)
    assert tree_simple_fill_s(None, 2, 16, 64 * MIB) == 0.0


def _tree(size, protocol, overrides=("nodes=2",)):
    topo = build_topology(load_arch("a100-roce-cluster", list(overrides)))
    return simulate_collective(topo, "all-reduce", size, f"tree/{protocol}")


def test_simple_tree_time_grows_by_the_fill_and_ll128_does_not():
    # 2 DGX A100: 8 NICs, so 8 channels of S / 8; chain of 8 GPUs and one tree level, 2 x 8 hops
    size = 1 * 2**30
    fill = tree_simple_fill_s("ampere", 2, 2 * (8 - 1 + 1), size / 8)
    assert fill == pytest.approx(16 * 512 * 1024 / 11.8e9)
    simple = _tree(size, "simple").latency_s
    simple_tiny = _tree(8, "simple").latency_s
    assert simple - simple_tiny >= fill  # the fill is on top of the bandwidth time
    # the fill is paid once per collective: a size ten times larger adds ten times the bandwidth time, not fill
    simple_big = _tree(10 * size, "simple").latency_s
    assert (simple_big - simple) == pytest.approx(9 * (simple - simple_tiny - fill), rel=0.02)


def test_a_small_simple_tree_moves_its_whole_part_per_hop():
    """8 NICs, so 16 channels (NCCL runs its searched channels twice) of 32 KiB: each hop
    is one 32 KiB chunk, not a 512 KiB step."""
    tiny = _tree(8, "simple").latency_s
    part = _tree(16 * 32 * 1024, "simple").latency_s
    fill = tree_simple_fill_s("ampere", 2, 16, 32 * 1024)
    assert fill <= part - tiny <= 1.1 * fill


def test_a_channel_carries_32_kib_until_every_channel_has_it():
    """Two channels per searched channel (``ncclTopoPostset``), of which a Simple collective
    runs one per 32 KiB (``topoGetAlgoInfo``): below 32 KiB one channel has it all."""
    assert tree_simple_channel_bytes(16 * 1024, 16, 8) == 16 * 1024
    assert tree_simple_channel_bytes(128 * 1024, 16, 8) == 32 * 1024
    assert tree_simple_channel_bytes(512 * 1024, 16, 8) == 32 * 1024
    assert tree_simple_channel_bytes(16 * MIB, 16, 8) == 1 * MIB
    assert tree_simple_channel_bytes(16 * MIB, 1440, 40) == 16 * MIB / 64  # MAXCHANNELS


def test_the_platforms_nccl_buffsize_sets_the_chunk():
    """A3 Mega's TCPXO environment sets NCCL_BUFFSIZE to 8 MiB: 1 MiB chunks, twice the fill."""
    topo = build_topology(load_arch("gcp-a3-mega"))
    default = build_topology(load_arch("gcp-a3-mega", ["network.nccl_buffer_size=4 MiB"]))
    assert topo.simple_buffer_bytes == 8 * MIB and default.simple_buffer_bytes == 4 * MIB
    size = 2**30
    extra = tree_simple_fill_s("hopper", 2, 16, size / 8, 8 * MIB) - tree_simple_fill_s("hopper", 2, 16, size / 8)
    assert extra == pytest.approx(16 * 512 * 1024 / 20.7e9)
    big, small = (simulate_collective(t, "all-reduce", size, "tree/simple").latency_s for t in (topo, default))
    assert big - small == pytest.approx(extra)


def test_a_buffer_size_that_is_not_positive_is_refused():
    with pytest.raises(InputError, match="nccl_buffer_size"):
        load_arch("gcp-a3-mega", ["network.nccl_buffer_size=0 MiB"])
