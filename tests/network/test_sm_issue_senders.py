"""A rank's SM budget covers what leaves its node too: a route across nodes starts at the
sender's rail NIC, whose bytes that GPU's SMs copy (``network/sm_issue.py``)."""

from __future__ import annotations

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, make_request, plan_for
from accelsim.network.sm_issue import held_to_sms, sender, senders, sm_copy_bytes_per_s


def test_each_nic_is_issued_by_its_rail_gpu():
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    gpu_of = senders(topo)
    assert len(gpu_of) == 16  # 8 NICs a node, one per GPU
    assert gpu_of["node1.nic3"] == sender((f"gpu{8 + 3}->switch",))


def test_a_budget_holds_a_gpu_s_nvlink_and_network_bytes_together():
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=2"]))
    plan = plan_for(topo, make_request(topo, "all-to-all", 64 * 2**20))
    held = held_to_sms(topo, plan, 2)
    gpu_of = senders(topo)
    for lane in held.lanes:
        for ph in lane:
            per_gpu: dict[str, float] = {}
            for t in ph.transfers:
                src = sender(t.links)
                per_gpu[gpu_of.get(src, src)] = per_gpu.get(gpu_of.get(src, src), 0.0) + t.max_bytes_per_s
            assert all(src.startswith("gpu") for src in per_gpu)  # no NIC with SMs of its own
            assert max(per_gpu.values()) <= 2 * sm_copy_bytes_per_s(topo) * (1 + 1e-9)
