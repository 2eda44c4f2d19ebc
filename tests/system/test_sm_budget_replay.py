"""A collective's ``sm_budget`` in the replay: compute-bound ops beside it run on the
chip's SMs minus that budget, instead of losing ``comm_sm_fraction``."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError
from accelsim.network import build_topology, simulate_collective
from accelsim.arch.model import load_arch
from accelsim.system.replay import ReplayOptions, chip_of, replay
from tests.system.conftest import compute, spmd

SIZE = 256 * 2**20
SMS = 132  # H100 SXM
COMPUTE_S = 1e-3


@pytest.fixture(scope="module")
def ar_alone_s(dgx):
    assert chip_of(dgx).num_cores == SMS
    return simulate_collective(build_topology(dgx), "all-reduce", SIZE).latency_s


def ar(name: str = "ar", **extra) -> dict:
    return {"name": name, "kind": "all-reduce", "bytes": SIZE, "async": True, **extra}


@pytest.mark.parametrize("fold", [True, False])
def test_compute_beside_a_budgeted_collective_runs_on_the_sms_left(dgx, ar_alone_s, fold):
    r = replay(spmd([ar(sm_budget=33), compute("b", COMPUTE_S)]), dgx,
               options=ReplayOptions(comm_sm_fraction=0.5, fold=fold))
    assert ar_alone_s < COMPUTE_S  # the collective ends while b runs: b loses 33/132 of its speed meanwhile
    assert r.step_time_s == pytest.approx(COMPUTE_S + ar_alone_s * 33 / SMS, rel=1e-6)


def test_a_collective_without_a_budget_still_takes_the_sm_fraction(dgx, ar_alone_s):
    r = replay(spmd([ar(), compute("b", COMPUTE_S)]), dgx, options=ReplayOptions(comm_sm_fraction=0.5))
    assert r.step_time_s == pytest.approx(COMPUTE_S + ar_alone_s * 0.5, rel=1e-6)


@pytest.mark.parametrize("budgets, fraction", [
    ((20, 13), 33 / SMS),
    ((100, 100), (SMS - 1) / SMS),  # more than the chip has: compute keeps one SM
])
def test_budgets_of_collectives_running_at_once_add_up(dgx, budgets, fraction):
    """Two collectives at once, each with a budget, take from compute what one SM fraction
    of their sum does (up to all SMs but one)."""
    def step(first: dict, second: dict) -> list[dict]:
        return [ar("x", stream="c1", **first), ar("y", stream="c2", **second), compute("b", COMPUTE_S)]

    budgeted = replay(spmd(step({"sm_budget": budgets[0]}, {"sm_budget": budgets[1]})), dgx,
                      options=ReplayOptions(comm_sm_fraction=0.0))
    plain = replay(spmd(step({}, {})), dgx, options=ReplayOptions(comm_sm_fraction=fraction))
    assert budgeted.step_time_s == plain.step_time_s


def test_a_budget_beside_an_unbudgeted_collective_adds_the_sm_fraction(dgx, ar_alone_s):
    ops = [ar("x", sm_budget=33, stream="c1"), ar("y", bytes=SIZE, stream="c2"), compute("b", COMPUTE_S)]
    mixed = replay(spmd(ops), dgx, options=ReplayOptions(comm_sm_fraction=0.25)).step_time_s
    budgets = replay(spmd([ar("x", sm_budget=33, stream="c1"), ar("y", sm_budget=33, stream="c2"),
                           compute("b", COMPUTE_S)]), dgx, options=ReplayOptions(comm_sm_fraction=0.25)).step_time_s
    # 33/132 + 0.25 = 0.5 of b's speed, the same as two budgets of 33 (66/132)
    assert mixed == pytest.approx(budgets, rel=1e-9)


def test_a_trace_without_budgets_replays_as_before(dgx):
    ops = [ar(), compute("b", COMPUTE_S)]
    assert replay(spmd(ops), dgx).step_time_s == replay(spmd(ops), dgx, options=ReplayOptions()).step_time_s


@pytest.mark.parametrize("system, budget, says", [
    ("dgx-h100", SMS, "expected fewer SMs than h100-sxm's 132 (compute keeps one), got 132"),
    ("tpu-v5e-4x4", 8, "is not a GPU: its collectives hold no SMs"),
])
def test_a_budget_the_chip_cannot_give_is_refused_where_it_is(system, budget, says):
    with pytest.raises(InputError) as caught:
        replay(spmd([ar(sm_budget=budget)]), load_arch(system))
    assert caught.value.field == "programs[0].ops[0].sm_budget" and says in caught.value.message
