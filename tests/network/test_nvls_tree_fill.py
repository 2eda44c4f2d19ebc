"""NVLSTree pays its pipeline's fill across nodes: each hop of the tree between nodes
carries a whole chunk before the next can forward it (Simple), at a channel's share of a
head's NIC, with NCCL's NVLSTree chunk (128 KiB, 64 KiB from 4 nodes, smaller for small
buffers)."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.algorithms.tree import tree_depth
from accelsim.network.nccl_tables import NVLS_CHANNELS, nvls_tree_chunk_bytes, nvls_tree_fill_s
from accelsim.network.topology import nic_up

KIB, MIB, GIB = 2**10, 2**20, 2**30


def test_chunk_follows_nccls_rule_by_size_and_node_count():
    # 16 channels x 8 heads = 128 concurrent chunks
    assert nvls_tree_chunk_bytes(8 * GIB, 16, 8, 2) == 128 * KIB
    assert nvls_tree_chunk_bytes(32 * MIB, 16, 8, 2) == 64 * KIB  # below 4 x 128 x 128 KiB
    assert nvls_tree_chunk_bytes(4 * MIB, 16, 8, 2) == 32 * KIB  # below 1 x 128 x 64 KiB
    assert nvls_tree_chunk_bytes(8 * GIB, 32, 8, 4) == 64 * KIB  # NVLSTREE_MAX_CHUNKSIZE from 4 nodes


def test_fill_is_hops_of_a_chunk_at_a_channels_share_of_the_nic():
    assert nvls_tree_fill_s("blackwell", 8 * GIB, 8, 4, 4, 50e9) == pytest.approx(4 * 64 * KIB * 32 / 50e9)
    # a head's share of a channel's part smaller than a chunk is what crosses
    assert nvls_tree_fill_s("hopper", 1 * MIB, 8, 2, 2, 50e9) == pytest.approx(2 * (MIB / 128) * 16 / 50e9)
    assert nvls_tree_fill_s(None, 8 * GIB, 8, 2, 2, 50e9) == 0.0


def test_two_h100_nodes_pay_the_fill_once(monkeypatch):
    import accelsim.network.algorithms.nvls as nvls

    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    nic = topo.links[nic_up(0, 0)].bandwidth_bytes_per_s
    fill = nvls_tree_fill_s("hopper", 1 * GIB, 8, 2, 2 * tree_depth(2), nic)
    assert fill == pytest.approx(2 * tree_depth(2) * 128 * KIB * NVLS_CHANNELS["hopper"] / nic)
    with_fill = simulate_collective(topo, "all-reduce", 1 * GIB, "nvls-tree").latency_s
    monkeypatch.setattr(nvls, "_nvls_tree_chunks_fill_s", lambda *args: 0.0)
    without = simulate_collective(topo, "all-reduce", 1 * GIB, "nvls-tree").latency_s
    assert with_fill - without == pytest.approx(fill, rel=1e-3)
