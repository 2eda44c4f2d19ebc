"""A block of flows (FluidResources.block / start_block) starts the same flows as
start_many would, however many times it starts, and only on the pool that made it."""

import pytest
import simpy

from accelsim.engine.fluid import Flow, FluidResources

CAPACITIES = {"a": 10.0, "b": 4.0, "c": 8.0}
FLOWS = [("x", {"a": 5.0, "b": 1.0}, 2.0), ("y", {"b": 3.0}, 1.5), ("z", {"a": 1.0, "c": 6.0}, 0.5)]


def ends(start) -> list[tuple[str, int]]:
    """Each flow's (name, end in ps) when ``start(env, pool)`` starts a round of flows
    three times, each once the round before has ended."""
    env = simpy.Environment()
    pool = FluidResources(env, CAPACITIES, coalesce_starts=True)
    out = []

    def rounds():
        for _ in range(3):
            flows = start(env, pool)
            yield simpy.AllOf(env, flows)
            out.extend((flow.name, flow.finished_ps) for flow in flows)

    env.process(rounds())
    env.run()
    return out


def test_a_block_starts_what_start_many_starts():
    def one_by_one(env, pool):
        return pool.start_many([Flow(name=n, demand=d, max_rate=r) for n, d, r in FLOWS])

    blocks = {}

    def as_block(env, pool):
        block = blocks.setdefault(id(pool), pool.block(*map(list, zip(*FLOWS))))
        return pool.start_block(block)

    assert ends(as_block) == ends(one_by_one)


def test_a_block_starts_only_on_its_pool():
    env = simpy.Environment()
    block = FluidResources(env, CAPACITIES).block(["x"], [{"a": 1.0}], [1.0])
    with pytest.raises(ValueError, match="pool that made it"):
        FluidResources(env, CAPACITIES).start_block(block)


def test_a_block_checks_its_demands_once_made():
    pool = FluidResources(simpy.Environment(), CAPACITIES)
    with pytest.raises(ValueError, match="unknown resources"):
        pool.block(["x"], [{"nope": 1.0}], [1.0])
