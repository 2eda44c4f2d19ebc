"""An SM budget bounds an MoE all-to-all: the bytes a rank's SMs copy move no faster than
those SMs issue them (NCCL's per-channel ceiling each), and no budget large enough to
leave the links the bottleneck changes the time."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology
from accelsim.network.moe import Routing, hit_chances, simulate_moe
from accelsim.network.sm_issue import sm_copy_bytes_per_s
from accelsim.network.nccl_tables import GENERATIONS

ROUTER = Routing(tokens=512, token_bytes=7392, top_k=8, experts=256, node_limit=None)


@pytest.fixture(scope="module")
def node():
    return build_topology(load_arch("dgx-h100"))


def nvlink_bytes_per_rank(ranks: int) -> float:
    rank_hit, _ = hit_chances(ROUTER, ranks, 8)
    return ROUTER.tokens * rank_hit * ROUTER.token_bytes * (ranks - 1)


def test_one_sm_moves_nccls_per_channel_ceiling_of_its_generation(node):
    assert sm_copy_bytes_per_s(node) == GENERATIONS["hopper"].ll128_channel_bytes_per_s == 36.7e9


def test_few_sms_bound_deepep_at_their_issue_rate(node):
    # 4 SMs: 2 send over NVLink (DeepEP's normal kernels split the budget in senders and receivers)
    result = simulate_moe(node, "deepep", routing=ROUTER, sm_budget=4)
    issue_bound_s = nvlink_bytes_per_rank(8) / (2 * 36.7e9)
    assert result.latency_s >= issue_bound_s
    assert result.latency_s == pytest.approx(issue_bound_s, rel=0.15)  # plus launch and step latencies


def test_enough_sms_leave_the_links_the_bottleneck(node):
    times = [simulate_moe(node, "deepep", routing=ROUTER, sm_budget=sms).latency_s for sms in (24, 64, 128)]
    assert times[0] == pytest.approx(times[1]) == pytest.approx(times[2])
    assert simulate_moe(node, "deepep", routing=ROUTER, sm_budget=8).latency_s > times[0]


def test_nccls_channels_issue_nvlink_and_network_bytes_alike():
    two_nodes = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    one = simulate_moe(two_nodes, "nccl", routing=ROUTER, sm_budget=1)
    rank_hit, _ = hit_chances(ROUTER, 16, 8)
    every_byte = ROUTER.tokens * rank_hit * ROUTER.token_bytes * 15
    assert one.latency_s >= every_byte / 36.7e9
    assert one.latency_s == pytest.approx(every_byte / 36.7e9, rel=0.15)


def test_low_latency_rdma_puts_are_read_by_the_nic_not_the_sms():
    # one GPU per node: every low-latency message is an RDMA put, which no SM copies
    nics = build_topology(load_arch("h100-ib-cluster", ["nodes=16", "node.gpus=1", "network.nics_per_node=1"]))
    one, many = (simulate_moe(nics, "deepep-ll", routing=ROUTER, sm_budget=sms).latency_s for sms in (1, 128))
    assert one == pytest.approx(many)
    assert simulate_moe(nics, "nccl", routing=ROUTER, sm_budget=1).latency_s > simulate_moe(
        nics, "nccl", routing=ROUTER, sm_budget=128).latency_s
