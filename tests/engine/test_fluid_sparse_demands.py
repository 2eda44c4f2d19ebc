"""A pool past its dense limit keeps each flow's demand as (resource, amount) pairs: the
same allocation as the dense matrix (up to the float rounding of sums added in another
order), through the switch from one to the other while flows run, with and without
free-running."""

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.engine import demands, fluid
from accelsim.engine.fair_share import max_min_rates, max_min_rates_sparse
from accelsim.engine.fluid import Flow, FluidResources
from tests.engine.conftest import draw_flows

LINKS = tuple(f"l{i}" for i in range(12))


@st.composite
def scenarios(draw):
    return draw_flows(draw, st, LINKS, max_flows=40, max_used=4)


def replay(capacities, flows, free_running):
    env = simpy.Environment()
    pool = FluidResources(env, capacities, free_running=free_running)
    ends = {}

    def launch(name, demand, rate, at):
        yield env.timeout(at)
        yield pool.start(Flow(name, demand, max_rate=rate))
        ends[name] = env.now

    for name, demand, rate, at in flows:
        env.process(launch(name, demand, rate, at))
    env.run()
    return ends, pool.used, pool.events, isinstance(pool._rows.demand, demands.SparseDemands)


@pytest.mark.parametrize("free_running", [False, True])
@settings(max_examples=60, deadline=None)
@given(scenario=scenarios(), limit=st.sampled_from([0, 16 * len(LINKS)]))
def test_pairs_give_the_dense_allocation(free_running, scenario, limit):
    capacities, flows = scenario
    dense_ends, dense_used, events, dense_is_sparse = replay(capacities, flows, free_running)
    # limit 0: pairs from the first flow; 16 slots' worth: switched when a 17th flow runs
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fluid, "DENSE_LIMIT_ENTRIES", limit)
        sparse_ends, sparse_used, _, is_sparse = replay(capacities, flows, free_running)
    assert not dense_is_sparse and (is_sparse or limit > 0)
    assert sparse_ends.keys() == dense_ends.keys()
    for name, end in dense_ends.items():
        # sums in another order may move a rounded-up end by a picosecond per event
        assert abs(sparse_ends[name] - end) <= events + 1, name
    for r in LINKS:
        assert sparse_used[r] == pytest.approx(dense_used[r], rel=1e-9, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_sparse_rates_match_the_dense_rates(flows, resources, seed):
    rng = np.random.default_rng(seed)
    demand = rng.random((flows, resources)) * (rng.random((flows, resources)) < 0.3)
    demand[rng.integers(flows), rng.integers(resources)] = 0.5  # contended pools use something
    max_rate = rng.random(flows) * 5 + 0.01
    capacity = rng.random(resources) * 3 + 0.1
    width = max(1, int((demand > 0).sum(axis=1).max()))
    columns = np.zeros((flows, width), dtype=np.int64)
    amounts = np.zeros((flows, width))
    for f in range(flows):
        used = np.flatnonzero(demand[f])
        columns[f, :len(used)], amounts[f, :len(used)] = used, demand[f, used]
    expected = max_min_rates(demand, max_rate, capacity)
    np.testing.assert_allclose(max_min_rates_sparse(columns, amounts, max_rate, capacity), expected,
                               rtol=1e-9, atol=1e-12)


def test_a_pool_under_the_limit_stays_dense():
    env = simpy.Environment()
    pool = FluidResources(env, {r: 1.0 for r in LINKS})
    for i in range(100):
        pool.start(Flow(f"f{i}", {LINKS[i % len(LINKS)]: 1.0}, max_rate=1.0))
    assert isinstance(pool._rows.demand, demands.DenseDemands)
