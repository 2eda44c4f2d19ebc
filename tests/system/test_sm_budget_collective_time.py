"""A collective's ``sm_budget`` bounds its own time in the replay: a rank's bytes move no
faster than its budget's SMs issue them (``network/sm_issue.py``), as in ``simulate_moe``."""

from __future__ import annotations

from collections import Counter

import pytest

from accelsim.network import build_topology, make_request, plan_for, simulate_collective
from accelsim.network.sm_issue import held_to_sms, sm_copy_bytes_per_s
from accelsim.system.replay import replay
from tests.system.conftest import programs, spmd

SIZE = 256 * 2**20


def ar(**extra) -> dict:
    return {"name": "ar", "kind": "all-reduce", "bytes": SIZE, **extra}


@pytest.fixture(scope="module")
def alone_s(dgx):
    return simulate_collective(build_topology(dgx), "all-reduce", SIZE).latency_s


def test_a_large_budget_leaves_the_collective_as_it_was(dgx, alone_s):
    """33 SMs issue 33 x 36.7 GB/s per rank, far above what NVLink moves."""
    assert replay(spmd([ar(sm_budget=33)]), dgx).step_time_s == pytest.approx(alone_s, rel=1e-9)


def test_a_small_budget_holds_each_rank_to_its_sms(dgx, alone_s):
    """On 2 SMs each rank sends at most 2 x 36.7 GB/s: the plan's busiest sender takes at
    least its bytes over 73.4 GB/s, longer than the collective alone, and the SMs, not the
    links or the latencies, set the time."""
    topo = build_topology(dgx)
    plan = plan_for(topo, make_request(topo, "all-reduce", SIZE))
    sent: Counter[str] = Counter()
    for lane in plan.lanes:
        for ph in lane:
            for t in ph.transfers:
                sent[t.links[0]] += t.bytes
    bound_s = max(sent.values()) / (2 * sm_copy_bytes_per_s(topo))
    step = replay(spmd([ar(sm_budget=2)]), dgx).step_time_s
    assert step >= bound_s > alone_s
    assert step == pytest.approx(bound_s, rel=0.05)


@pytest.mark.parametrize("budgets", [(2, 40), (40, 2)])
def test_the_fewest_sms_among_the_members_pace_the_collective(dgx, budgets):
    """Members that name different budgets: the smallest one holds the instance."""
    def two(first: int, second: int) -> float:
        progs = [{"name": "a", "devices": ["0-3"], "ops": [ar(sm_budget=first)]},
                 {"name": "b", "devices": ["4-7"], "ops": [ar(sm_budget=second)]}]
        return replay(programs(progs), dgx).step_time_s

    assert two(*budgets) == two(2, 2) > two(40, 40)


def test_holding_keeps_every_byte_and_route(dgx):
    topo = build_topology(dgx)
    plan = plan_for(topo, make_request(topo, "all-reduce", SIZE))
    held = held_to_sms(topo, plan, 2)
    pairs = [(t.links, t.bytes) for lane in plan.lanes for ph in lane for t in ph.transfers]
    assert [(t.links, t.bytes) for lane in held.lanes for ph in lane for t in ph.transfers] == pairs
    assert all(t.max_bytes_per_s < float("inf") for lane in held.lanes for ph in lane for t in ph.transfers)
