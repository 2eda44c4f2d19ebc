"""NCCL caps NVLSTree's bus bandwidth per NVLS head (``perChMaxNVLSTreeBws``, one head per
NIC, at most 32): where the switch and the NICs would allow more, the cap sets the rate."""

import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import nvls_tree_bus_cap_bytes_per_s

GIB = 2**30


def test_cap_is_heads_times_nccls_figure_by_node_count():
    assert nvls_tree_bus_cap_bytes_per_s("hopper", 2, 8) == pytest.approx(8 * 57.7e9)
    assert nvls_tree_bus_cap_bytes_per_s("hopper", 16, 8) == pytest.approx(8 * 45.5e9)
    assert nvls_tree_bus_cap_bytes_per_s("blackwell", 2, 72) == pytest.approx(32 * 96.0e9)
    assert nvls_tree_bus_cap_bytes_per_s("ampere", 2, 8) is None


def test_two_h100_nodes_run_nvls_tree_at_the_cap(monkeypatch):
    import accelsim.network.algorithms.nvls as nvls

    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    capped = simulate_collective(topo, "all-reduce", 8 * GIB, "nvls-tree").busbw_bytes_per_s
    assert capped == pytest.approx(8 * 57.7e9, rel=0.01)
    monkeypatch.setattr(nvls, "_nvls_tree_cap", lambda *args: math.inf)
    assert simulate_collective(topo, "all-reduce", 8 * GIB, "nvls-tree").busbw_bytes_per_s > 1.05 * capped
