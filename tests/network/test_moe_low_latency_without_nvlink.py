"""DeepEP's low-latency kernels without NVLink (as first released, and with
``allow_nvlink_for_low_latency_mode=False``) put every message through the NICs, the own
node's peers included; only they may."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology
from accelsim.network.moe import RDMA_PUT_EFFICIENCY, Routing, simulate_moe

ROUTER = Routing(tokens=128, token_bytes=7408, top_k=8, experts=256)


@pytest.fixture(scope="module")
def two_nodes():
    return build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))


def test_every_message_leaves_through_the_nic(two_nodes):
    with_nvlink = simulate_moe(two_nodes, "deepep-ll", routing=ROUTER, sm_budget=128)
    rdma_only = simulate_moe(two_nodes, "deepep-ll", routing=ROUTER, sm_budget=128, nvlink=False)
    per_peer = ROUTER.tokens * ROUTER.top_k / 16 * ROUTER.token_bytes
    assert with_nvlink.network_bytes_per_rank == pytest.approx(8 * per_peer)
    assert with_nvlink.nvlink_bytes_per_rank == pytest.approx(7 * per_peer)
    assert rdma_only.network_bytes_per_rank == pytest.approx(15 * per_peer)
    assert rdma_only.nvlink_bytes_per_rank == 0
    nic_s = 7 * per_peer / (50e9 * RDMA_PUT_EFFICIENCY)  # the NIC carries the 7 own-node parts too
    assert rdma_only.latency_s - with_nvlink.latency_s == pytest.approx(nic_s, rel=0.02)


def test_only_the_low_latency_kernels_go_without_nvlink(two_nodes):
    with pytest.raises(InputError, match="nvlink"):
        simulate_moe(two_nodes, "deepep", routing=ROUTER, nvlink=False)
    node = build_topology(load_arch("dgx-h100"))
    with pytest.raises(InputError, match="no NICs"):
        simulate_moe(node, "deepep-ll", routing=ROUTER, sm_budget=128, nvlink=False)
