"""An axis without wraparound: the torus ring runs its closing stream back along the line.
Does that cost more than a bidirectional line all-gather (each chip's shard flowing both
ways to the ends), as a review suspected? No: on the busiest link the two carry the same
(m-1)/m of the output, which is the JAX scaling book's no-wraparound term (V (N-1)/N at the
one-way link bandwidth, (N-1) hops), and the ring's m-1 steps are the line's m-1 hops.
They differ in the other links: the line leaves the links near its ends less loaded, the
ring loads every link alike (docs/collectives.md, "Axes without wraparound")."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, link_loads, plan_for, simulate_collective
from accelsim.network.analytic import scaling_book_all_gather_terms
from accelsim.network.simulate import make_request

SIZE = 256 * 2**20


@pytest.fixture(scope="module")
def line():
    topo = build_topology(load_arch("tpu-v5e-4x4"))  # 4 x 4, no wraparound
    return topo, topo.axis_rings(0)[0]


def line_all_gather_loads(m: int, size: float) -> list[float]:
    """Bytes on each directed link i -> i+1 of a bidirectional line all-gather: the shards
    of chips 0..i (and symmetrically the other way)."""
    return [(i + 1) * size / m for i in range(m - 1)]


def test_the_busiest_link_carries_what_a_line_all_gather_puts_on_its_busiest(line):
    topo, group = line
    m = len(group)
    plan = plan_for(topo, make_request(topo, "all-gather", SIZE, None, group), "ring")
    ring_max = max(link_loads(plan).values())
    assert ring_max == pytest.approx(max(line_all_gather_loads(m, SIZE)))
    assert ring_max == pytest.approx((m - 1) / m * SIZE)


def test_the_time_is_the_scaling_books_no_wraparound_term_plus_the_hops(line):
    topo, group = line
    link = topo.links[topo.route(group[0], group[1])[0]]
    latency, bandwidth = scaling_book_all_gather_terms(SIZE, [len(group)], [False], link.bandwidth_bytes_per_s,
                                                       link.latency_s)
    simulated = simulate_collective(topo, "all-gather", SIZE, "ring", group=group).latency_s
    assert simulated == pytest.approx(bandwidth + latency + topo.launch_s, rel=1e-6)


def test_the_ring_loads_every_link_alike_where_the_line_spares_its_ends(line):
    topo, group = line
    m = len(group)
    loads = link_loads(plan_for(topo, make_request(topo, "all-gather", SIZE, None, group), "ring"))
    assert sum(loads.values()) == pytest.approx(2 * (m - 1) * (m - 1) / m * SIZE)  # every one of 2(m-1) links full
    assert sum(loads.values()) > 2 * sum(line_all_gather_loads(m, SIZE))
