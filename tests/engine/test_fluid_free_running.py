"""Free-running (an end-time heap while nothing is contended) gives the times and the
resource use of the full allocation at every event, through entries and exits."""

import simpy
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accelsim.engine.fluid import Flow, FluidResources
from tests.engine.conftest import draw_flows

RESOURCES = ("a", "b", "c")


@st.composite
def scenarios(draw):
    capacities, flows = draw_flows(draw, st, RESOURCES, max_flows=25, max_used=3)
    # follow-ups started when a flow ends, as a kernel's next program is
    chained = draw(st.lists(st.integers(0, len(flows) - 1), max_size=10))
    return capacities, flows, chained


def replay(capacities, flows, chained, free_running):
    env = simpy.Environment()
    pool = FluidResources(env, capacities, free_running=free_running)
    ends = {}
    follow = {}
    for k, parent in enumerate(chained):
        follow.setdefault(f"f{parent}", []).append(k)

    def done(flow):
        ends[flow.name] = flow.finished_ps
        for k in follow.get(flow.name, []):
            pool.start(Flow(f"{flow.name}+{k}", {"a": 1.0 + k}, max_rate=2.0)).callbacks.append(done)

    def launch(name, demand, rate, at):
        yield env.timeout(at)
        pool.start(Flow(name, demand, max_rate=rate)).callbacks.append(done)

    for name, demand, rate, at in flows:
        env.process(launch(name, demand, rate, at))
    env.run()
    return ends, pool.used, pool.events


@settings(max_examples=150, deadline=None)
@given(scenarios())
@example(({"a": 1.0, "b": 1.0, "c": 1.0}, [(f"f{i}", {}, 0.25, i) for i in range(4)], []))
def test_free_running_matches_the_allocation(scenario):
    capacities, flows, chained = scenario
    slow_ends, slow_used, slow_events = replay(capacities, flows, chained, free_running=False)
    fast_ends, fast_used, fast_events = replay(capacities, flows, chained, free_running=True)
    assert fast_ends.keys() == slow_ends.keys()
    for name, end in slow_ends.items():
        # float rounding of progress may move a rounded-up end by a picosecond per event
        assert abs(fast_ends[name] - end) <= slow_events + 1, name
    for r in RESOURCES:
        assert abs(fast_used[r] - slow_used[r]) <= 1e-9 * max(1.0, slow_used[r])
    # The allocation ends flows whose remaining work is below its epsilon together with
    # the one due (a few ps early); free-running ends each at its own picosecond, which
    # may take one more timer per flow the allocation ended early (seen: four flows
    # started 1 ps apart, 5 timers against 7).
    early = sum(fast_ends[name] != end for name, end in slow_ends.items())
    assert fast_events <= slow_events + 1 + early


def test_uncontended_flows_never_reallocate():
    env = simpy.Environment()
    pool = FluidResources(env, {"hbm": 1e6}, free_running=True)
    for i in range(50):
        pool.start(Flow(f"f{i}", {"hbm": 10.0}, max_rate=1.0 + i))
    env.run()
    assert pool._free.on and pool.used["hbm"] == 500.0
