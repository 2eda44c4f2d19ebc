"""MoE dispatch: the expected traffic of a router, and NCCL's all-to-all against DeepEP's
NVLink-forwarding and low-latency kernels on a two-node cluster."""

import json
import math

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology
from accelsim.network.moe import (Routing, deepep_message_bytes, expected_matrix, hit_chances, load_matrix, matrix_text,
                                  simulate_moe)

ROUTER = Routing(tokens=512, token_bytes=7392, top_k=8, experts=256, node_limit=None)


@pytest.fixture(scope="module")
def two_nodes():
    return build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))


def test_the_expected_matrix_sends_a_token_once_per_rank_it_reaches():
    ranks = 16
    m = expected_matrix(ROUTER, ranks, 8)
    rank_hit, _ = hit_chances(ROUTER, ranks, 8)
    miss = math.comb(256 - 16, 8) / math.comb(256, 8)  # none of the 8 experts on a given rank (16 experts each)
    assert rank_hit == pytest.approx(1 - miss)
    assert m.sum(axis=1)[0] == pytest.approx(ROUTER.tokens * ROUTER.token_bytes * rank_hit * ranks)
    assert 1 <= rank_hit * ranks <= ROUTER.top_k  # distinct ranks a token reaches: at least one, at most top_k


def test_node_limited_routing_reaches_no_more_nodes_than_allowed():
    limited = Routing(tokens=1, token_bytes=1, top_k=8, experts=256, node_limit=2)
    _, node_hit = hit_chances(limited, 64, 8)
    _, free_hit = hit_chances(ROUTER, 64, 8)
    assert node_hit * 8 <= 2 + 1e-12 < free_hit * 8


def test_deepep_sends_a_token_once_per_node_where_nccl_sends_it_per_rank(two_nodes):
    nccl = simulate_moe(two_nodes, "nccl", routing=ROUTER)
    deepep = simulate_moe(two_nodes, "deepep", routing=ROUTER)
    rank_hit, node_hit = hit_chances(ROUTER, 16, 8)
    message = deepep_message_bytes(ROUTER.token_bytes, ROUTER.top_k, "dispatch", across_nodes=True)
    assert deepep.network_bytes_per_rank == pytest.approx(ROUTER.tokens * node_hit * message)
    assert nccl.network_bytes_per_rank == pytest.approx(8 * ROUTER.tokens * rank_hit * ROUTER.token_bytes)
    assert deepep.latency_s < nccl.latency_s  # the NIC is the bottleneck and DeepEP moves less through it


def test_the_sm_budget_is_recorded(two_nodes):
    assert simulate_moe(two_nodes, "deepep", routing=ROUTER).sm_budget == 20
    assert simulate_moe(two_nodes, "deepep-ll", routing=ROUTER, sm_budget=8).as_dict()["sm_budget"] == 8
    with pytest.raises(InputError, match="SM budget"):
        simulate_moe(two_nodes, "deepep", routing=ROUTER, sm_budget=0)


def test_a_matrix_file_round_trips_and_bad_ones_are_refused(two_nodes, tmp_path):
    m = np.arange(256, dtype=float).reshape(16, 16) * 1e3
    path = tmp_path / "m.json"
    path.write_text(matrix_text(m))
    assert np.array_equal(load_matrix(path, 16), m)
    assert simulate_moe(two_nodes, "nccl", matrix=load_matrix(path, 16)).latency_s > 0
    path.write_text(json.dumps({"bytes": [[1, -1]] * 2}))
    with pytest.raises(InputError, match="non-negative"):
        load_matrix(path, 2)
    with pytest.raises(InputError, match="needs the router"):
        simulate_moe(two_nodes, "deepep", matrix=m)
