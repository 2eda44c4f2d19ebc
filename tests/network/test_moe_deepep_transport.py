"""DeepEP's kernels as they run: the low-latency kernels hold one SM per warp-group pair of
experts (nearly the whole GPU), and their RDMA legs run at NVSHMEM's put bandwidth where
NCCL's keep the NIC's line rate."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology
from accelsim.network.moe import RDMA_PUT_EFFICIENCY, Routing, low_latency_sms, simulate_moe

ROUTER = Routing(tokens=128, token_bytes=7408, top_k=8, experts=256, node_limit=None)


def test_low_latency_kernels_launch_one_warp_group_per_expert():
    assert low_latency_sms(256, 132) == 128  # 2 groups per SM
    assert low_latency_sms(288, 132) == 96  # 3 groups per SM
    assert low_latency_sms(64, 132) == 64


def test_the_low_latency_budget_follows_from_the_gpu():
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    assert simulate_moe(topo, "deepep-ll", routing=ROUTER, device_sms=132).sm_budget == 128
    with pytest.raises(InputError, match="device_sms"):
        simulate_moe(topo, "deepep-ll", routing=ROUTER)


def test_rdma_legs_run_at_nvshmems_put_bandwidth():
    # one GPU per node, top-1: both modes send the same streams, every byte through the NIC
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=16", "node.gpus=1", "network.nics_per_node=1"]))
    top1 = Routing(tokens=4096, token_bytes=7408, top_k=1, experts=16, node_limit=None)
    ll = simulate_moe(topo, "deepep-ll", routing=top1, sm_budget=128)
    nccl = simulate_moe(topo, "nccl", routing=top1, sm_budget=128)
    assert ll.network_bytes_per_rank == pytest.approx(nccl.network_bytes_per_rank)
    line_rate_s = ll.network_bytes_per_rank / 50e9
    assert ll.latency_s - nccl.latency_s == pytest.approx(line_rate_s * (1 / RDMA_PUT_EFFICIENCY - 1), rel=0.02)
