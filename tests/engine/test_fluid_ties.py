"""Progressive filling freezes every resource that saturates at one level together (a
symmetric collective has thousands of links in a few classes). The rates are those of
freezing one bottleneck at a time, the plain algorithm written out below."""

import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.engine.fluid import Flow, FluidResources


def one_at_a_time(capacities, flows):
    """Dominant-resource max-min rates, one bottleneck resource frozen per round."""
    dominant = [max((amount / capacities[r] for r, amount in f.demand.items()), default=0.0) for f in flows]
    rate = [f.max_rate if d == 0 else None for f, d in zip(flows, dominant)]
    free = dict(capacities)
    unfrozen = {i for i, d in enumerate(dominant) if d > 0}
    while unfrozen:
        load = {r: 0.0 for r in capacities}
        for i in unfrozen:
            for r, amount in flows[i].demand.items():
                load[r] += amount / dominant[i]
        levels = {r: free[r] / load[r] for r in capacities if load[r] > 1e-12}
        bottleneck = min(levels, key=lambda r: (levels[r], list(capacities).index(r)))
        level = levels[bottleneck]
        capped = {i for i in unfrozen if flows[i].max_rate * dominant[i] <= level}
        if capped:
            freeze = capped
            for i in freeze:
                rate[i] = flows[i].max_rate
        else:
            freeze = {i for i in unfrozen if flows[i].demand.get(bottleneck, 0) > 0}
            for i in freeze:
                rate[i] = level / dominant[i]
        for i in freeze:
            for r, amount in flows[i].demand.items():
                free[r] = max(free[r] - rate[i] * amount, 0.0)
        unfrozen -= freeze
    return rate


@st.composite
def symmetric_pools(draw):
    """Copies of one pattern of flows over copies of its links, plus links all share."""
    copies = draw(st.integers(1, 6))
    local = [f"l{k}" for k in range(draw(st.integers(1, 3)))]
    shared = [f"s{k}" for k in range(draw(st.integers(0, 2)))]
    capacities = {f"{r}.{c}": cap for r, cap in
                  ((r, draw(st.floats(5.0, 200.0))) for r in local) for c in range(copies)}
    capacities.update({r: draw(st.floats(5.0, 800.0)) for r in shared})
    pattern = []
    for _ in range(draw(st.integers(1, 5))):
        uses = draw(st.lists(st.sampled_from(local + shared), min_size=0, max_size=3, unique=True))
        pattern.append(({r: draw(st.floats(0.5, 10.0)) for r in uses},
                        draw(st.sampled_from([0.5, 1.0, 4.0, 1e3]))))
    flows = []
    for c in range(copies):
        for k, (demand, max_rate) in enumerate(pattern):
            names = {r: (r if r in shared else f"{r}.{c}") for r in demand}
            flows.append(Flow(f"f{k}.{c}", {names[r]: v for r, v in demand.items()}, max_rate=max_rate))
    return capacities, flows


@settings(max_examples=150, deadline=None)
@given(symmetric_pools())
def test_rates_match_freezing_one_bottleneck_at_a_time(pool_spec):
    capacities, flows = pool_spec
    pool = FluidResources(simpy.Environment(), capacities)
    pool.start_many(flows)
    got = {f.name: f.rate for f in pool.snapshot()}
    expected = one_at_a_time(capacities, flows)
    for flow, want in zip(flows, expected):
        assert abs(got[flow.name] - want) <= 1e-9 * want, (flow.name, got[flow.name], want)
    for resource, use in pool.rates().items():
        assert use <= capacities[resource] * (1 + 1e-9)


def test_copies_of_one_bottleneck_get_equal_rates():
    capacities = {f"link{c}": 100.0 for c in range(64)}
    flows = [Flow(f"f{c}.{k}", {f"link{c}": 10.0 * (k + 1)}, max_rate=1e6) for c in range(64) for k in range(3)]
    pool = FluidResources(simpy.Environment(), capacities)
    pool.start_many(flows)
    rates = {f.name: f.rate for f in pool.snapshot()}
    # three flows of 10, 20, 30 B on each 100 B/s link: equal shares of 100/3 B/s
    for name, rate in rates.items():
        demand = 10.0 * (int(name.rsplit(".", 1)[1]) + 1)
        assert abs(rate * demand - 100.0 / 3) < 1e-9
