"""FluidResources.set_max_rates: a running flow's pace changes from now on, its progress
so far kept, alone (free-running) and under contention (the allocation)."""

from __future__ import annotations

import pytest
import simpy

from accelsim.engine.fluid import Flow, FluidResources


def run(free_running: bool, contended: bool):
    env = simpy.Environment()
    pool = FluidResources(env, {"bw": 1e8 if contended else 1e12}, free_running=free_running)
    ends = {}

    def done(flow):
        ends[flow.name] = env.now

    a = Flow("a", {"bw": 1.0}, max_rate=1e12 / 1000)  # 1000 ps alone
    b = Flow("b", {"bw": 1.0}, max_rate=1e12 / 4000)
    for flow in pool.start_many([a, b]):
        flow.callbacks.append(done)

    def speed_up(_event):
        pool.set_max_rates([b], [1e12 / 1000])  # from 400 ps on, b could finish in 1000 ps alone

    env.timeout(400).callbacks.append(speed_up)
    env.run()
    return ends, pool.used["bw"]


@pytest.mark.parametrize("free_running", [True, False])
def test_uncontended_flow_keeps_its_progress(free_running):
    ends, used = run(free_running, contended=False)
    assert ends["a"] == 1000
    # b did 400/4000 = 10% at the old pace; the other 90% takes 900 ps at the new one
    assert ends["b"] == 1300
    assert used == pytest.approx(2.0)


def test_contended_flow_shares_at_its_new_pace():
    # 1e8 units per second is far below either flow's pace: they share it equally
    ends, used = run(False, contended=True)
    assert ends["a"] == ends["b"]  # equal shares, equal work: a pace cap change that does not bind changes nothing
    assert used == pytest.approx(2.0)


def test_a_finished_flow_cannot_be_rerated():
    env = simpy.Environment()
    pool = FluidResources(env, {"bw": 10.0})
    flow = Flow("f", {"bw": 1.0}, max_rate=1.0)
    with pytest.raises(ValueError, match="not running"):
        pool.set_max_rates([flow], [2.0])
