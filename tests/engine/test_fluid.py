"""Max-min fair sharing of resources between flows."""

import pytest
import simpy

from accelsim.engine.fluid import Flow, FluidResources
from accelsim.units import PS_PER_S


def run(capacities, flows, starts=None):
    env = simpy.Environment()
    pool = FluidResources(env, capacities)
    starts = starts or [0] * len(flows)

    def launch(flow, at):
        yield env.timeout(at)
        pool.start(flow)

    for flow, at in zip(flows, starts):
        env.process(launch(flow, at))
    env.run()
    return pool


def test_flow_alone_runs_at_its_max_rate():
    flow = Flow("a", {"hbm": 100.0}, max_rate=0.5)
    run({"hbm": 1e6}, [flow])
    assert flow.finished_ps == 2 * PS_PER_S


def test_two_flows_share_a_bottleneck_equally():
    a, b = Flow("a", {"hbm": 100.0}, max_rate=10.0), Flow("b", {"hbm": 100.0}, max_rate=10.0)
    run({"hbm": 100.0}, [a, b])
    assert a.finished_ps == b.finished_ps == 2 * PS_PER_S


def test_freed_bandwidth_goes_to_the_survivor():
    small, big = Flow("s", {"hbm": 50.0}, max_rate=10.0), Flow("b", {"hbm": 150.0}, max_rate=10.0)
    run({"hbm": 100.0}, [small, big])
    # both at 50 B/s until small is done at t=1; then big alone at 100 B/s for its last 100 B
    assert small.finished_ps == 1 * PS_PER_S
    assert big.finished_ps == 2 * PS_PER_S


def test_flow_limited_elsewhere_leaves_bandwidth_to_others():
    slow = Flow("slow", {"hbm": 10.0}, max_rate=1.0)  # wants 10 B/s only
    fast = Flow("fast", {"hbm": 180.0}, max_rate=100.0)
    run({"hbm": 100.0}, [slow, fast])
    # fast gets 90 B/s for 1 s, then all 100 B/s for its last 90 B
    assert fast.finished_ps == pytest.approx(1.9 * PS_PER_S, rel=1e-9)
    assert slow.finished_ps == 1 * PS_PER_S


def test_bytes_are_conserved():
    flows = [Flow(f"f{i}", {"hbm": 10.0 * (i + 1), "l2": 3.0}, max_rate=5.0) for i in range(5)]
    pool = run({"hbm": 40.0, "l2": 7.0}, flows, starts=[0, 1, 1, 2, 5])
    assert pool.used["hbm"] == pytest.approx(150.0)
    assert pool.used["l2"] == pytest.approx(15.0)


def test_deterministic():
    def once():
        flows = [Flow(f"f{i}", {"hbm": 7.0 + i}, max_rate=3.0 + i) for i in range(20)]
        run({"hbm": 13.0}, flows, starts=[i % 3 for i in range(20)])
        return [f.finished_ps for f in flows]

    assert once() == once()


def test_flow_without_shared_demand_runs_at_its_own_pace():
    idle = Flow("latency", {}, max_rate=1e6)
    busy = Flow("busy", {"hbm": 100.0}, max_rate=10.0)
    run({"hbm": 50.0}, [idle, busy])
    assert idle.finished_ps == 1_000_000
    assert busy.finished_ps == 2 * PS_PER_S
