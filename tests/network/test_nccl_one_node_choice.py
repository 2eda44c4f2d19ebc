"""On one NVSwitch node ``auto`` runs the algorithm and protocol NCCL's own estimate rates
fastest (ncclTopoTuneModel / ncclTopoGetAlgoTime from NCCL's tables, nothing fitted), not the
plan the model times fastest."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.auto import nccl_one_node_ranking
from accelsim.network.nccl_tables import nccl_one_node_estimate_s, nvls_graph, ring_graph
from accelsim.network.simulate import make_request

GB, MIB = 1e9, 2**20


def test_graphs_follow_nccls_search_and_duplication():
    assert ring_graph("hopper", 18) == (12, 30 * GB)  # 6 x 60 GB/s in 18 x 20.6, run twice
    assert ring_graph("ampere", 12) == (12, 20 * GB)  # 6 x 40 in 12 x 20, run twice
    assert ring_graph("blackwell", 18) == (16, 45 * GB)
    assert nvls_graph("hopper", 18, 8) == (8, 40 * GB)  # a head's NVLink carries its channel twice
    assert nvls_graph("blackwell", 18, 8) == (8, 80 * GB)


def _choice(generation, links, size, protocols=("ll", "ll128", "simple"), algorithms=("ring", "nvls")):
    rated = {(a, p): nccl_one_node_estimate_s(generation, links, a, p, size, 8) for a in algorithms for p in protocols}
    return min((k for k, v in rated.items() if v is not None), key=rated.get)


@pytest.mark.parametrize(("size", "expected"), [(1 * MIB, ("ring", "ll")), (2 * MIB, ("nvls", "simple")),
                                                (32 * MIB, ("nvls", "simple"))])
def test_nccl_takes_nvls_from_2_mib_on_8_h100s(size, expected):
    assert _choice("hopper", 18, size) == expected


@pytest.mark.parametrize(("size", "expected"), [(2 * MIB, "ll"), (4 * MIB, "ll128"), (16 * MIB, "ll128"),
                                                (32 * MIB, "simple")])
def test_nccl_picks_the_protocol_on_8_a100s(size, expected):
    assert _choice("ampere", 12, size, algorithms=("ring",)) == ("ring", expected)


def test_auto_follows_nccls_estimate_not_the_fastest_plan():
    slow_nvls = build_topology(load_arch("dgx-h100", ["collectives.nvls_latency=500 us"]))
    result = simulate_collective(slow_nvls, "all-reduce", 16 * MIB)
    ring = simulate_collective(slow_nvls, "all-reduce", 16 * MIB, "ring")
    assert result.algorithm == "nvls" and result.latency_s > ring.latency_s


def test_groups_across_nodes_are_left_to_the_model():
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    assert nccl_one_node_ranking(topo, make_request(topo, "all-reduce", 16 * MIB)) is None
    assert nccl_one_node_ranking(topo, make_request(topo, "all-reduce", 16 * MIB, ranks=8))[0] == "nvls/simple"
