"""A flow is the SimPy event of its end: starting it returns it, processes yield it as they
would a SimPy resource's request, conditions combine it, and what a waiter starts at that
instant joins the one reallocation the end causes."""

import pytest
import simpy

from accelsim.engine.fluid import Flow, FluidResources
from accelsim.units import PS_PER_S


def test_a_process_resumes_at_its_flows_end():
    env = simpy.Environment()
    pool = FluidResources(env, {"hbm": 100.0})
    seen = []

    def program(name, work):
        first = Flow(name, {"hbm": work}, max_rate=10.0)
        yield pool.start(first)
        seen.append((name, env.now, first.finished_ps))
        second = Flow(name + "'", {"hbm": 50.0}, max_rate=10.0)
        yield pool.start(second)
        seen.append((second.name, env.now, second.finished_ps))

    env.process(program("a", 50.0))
    env.process(program("b", 150.0))
    env.run()
    # a and b share 100 B/s until a's 50 B are done (t=1 s); a' and b then share it
    assert seen[0] == ("a", PS_PER_S, PS_PER_S)
    assert [name for name, _, _ in seen] == ["a", "a'", "b", "b'"]
    assert all(now == end for _, now, end in seen)


def test_all_of_a_phases_flows():
    env = simpy.Environment()
    pool = FluidResources(env, {"link": 100.0})
    ended = []

    def phase():
        yield simpy.AllOf(env, pool.start_many([Flow(f"t{i}", {"link": 100.0 * (i + 1)}, max_rate=1e3)
                                                for i in range(3)]))
        ended.append(env.now)

    env.process(phase())
    env.run()
    assert ended == [6 * PS_PER_S]  # 600 bytes through one 100 B/s link


@pytest.mark.parametrize("free_running", [False, True])
def test_flows_started_by_waiters_join_the_ends_reallocation(free_running):
    """Two flows end together; each waiter starts a successor. A timer per reallocation
    that leaves flows running: the two starts at 0, then one for both successors at 1 s
    (one each would make four)."""
    env = simpy.Environment()
    pool = FluidResources(env, {"hbm": 1e9}, free_running=free_running)

    def program(name):
        yield pool.start(Flow(name, {"hbm": 1.0}, max_rate=1.0))
        yield pool.start(Flow(name + "'", {"hbm": 1.0}, max_rate=1.0))

    env.process(program("a"))
    env.process(program("b"))
    env.run()
    assert env.now == 2 * PS_PER_S
    assert pool.events == 3


def test_coalesced_starts_give_the_same_ends():
    """Coalescing is a shortcut: flows started at one instant by separate callers get one
    reallocation instead of one each, and the same end times."""

    def run(coalesce):
        env = simpy.Environment()
        pool = FluidResources(env, {"x": 30.0, "y": 20.0}, coalesce_starts=coalesce)
        ends = {}

        def lane(i):
            yield env.timeout(i % 3)
            yield pool.start(Flow(f"f{i}", {"x": 5.0 + i, "y": 3.0 * (i % 4)}, max_rate=1.0 + i))
            ends[i] = env.now

        for i in range(12):
            env.process(lane(i))
        env.run()
        return ends, pool.events

    coalesced, fewer = run(True)
    each, more = run(False)
    assert coalesced == each
    assert fewer < more


def test_a_flow_runs_once():
    env = simpy.Environment()
    pool = FluidResources(env, {"hbm": 1.0})
    flow = Flow("f", {"hbm": 1.0}, max_rate=1.0)
    pool.start(flow)
    env.run()
    assert flow.processed and flow.ok and flow.finished_ps == PS_PER_S
    with pytest.raises(ValueError, match="a flow runs once"):
        pool.start(flow)
