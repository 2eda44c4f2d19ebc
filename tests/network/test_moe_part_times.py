"""Where a MoE all-to-all's time goes: each part alone (latencies, the busiest NVLink link,
the busiest NIC, the SMs' issue rate, the low-latency receive pass) bounds the simulated
time from below, and meets it where every rank's traffic is alike."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology
from accelsim.network.moe import Routing, simulate_moe

ROUTER = Routing(tokens=1024, token_bytes=7392, top_k=8, experts=256)


@pytest.fixture(scope="module")
def two_nodes():
    return build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))


@pytest.mark.parametrize("mode, budget", [("nccl", 16), ("deepep", 24), ("deepep", 4), ("deepep-ll", 128)])
def test_the_parts_bound_the_simulated_time(two_nodes, mode, budget):
    r = simulate_moe(two_nodes, mode, routing=ROUTER, sm_budget=budget, hbm_bytes_per_s=3e12)
    assert r.times.bound_s <= r.latency_s * (1 + 1e-9)
    assert r.latency_s == pytest.approx(r.times.bound_s, rel=0.02)  # every rank alike: no part waits on another


def test_each_part_is_its_own_resource(two_nodes):
    r = simulate_moe(two_nodes, "deepep", routing=ROUTER, sm_budget=4)
    assert r.network_bytes_per_rank == pytest.approx(r.times.network_s * 50e9 * 0.94)  # NVSHMEM's put rate
    assert r.times.issue_s > r.times.nvlink_s  # 2 SMs issue the NVLink bytes, slower than the links take them
    assert r.times.receive_s == 0 and r.times.fixed_s > 0


def test_the_low_latency_kernels_add_their_receive_pass(two_nodes):
    r = simulate_moe(two_nodes, "deepep-ll", routing=ROUTER, sm_budget=128, hbm_bytes_per_s=3e12)
    assert r.times.receive_s == pytest.approx(2 * ROUTER.tokens * ROUTER.top_k * ROUTER.token_bytes / 3e12)
    assert r.times.as_dict()["receive_s"] == r.times.receive_s
