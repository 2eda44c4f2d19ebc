"""TPU ring all-gather against the JAX scaling book's ICI model (jax-ml/scaling-book
sharding.md @04d8de58, :mod:`accelsim.network.analytic`). The issue's floor: within 10%
where the book's formula applies, i.e. where its bandwidth term dominates its latency
term (the book takes their max, the simulator adds them, so near the crossover they
differ by up to 2x)."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.analytic import scaling_book_all_gather_terms, torus_case

CASES = [
    ("tpu-v5e-16x16", None), ("tpu-v5e-16x16", 0), ("tpu-v5p-8x8x8", None), ("tpu-v4-4x4x4", None),
    ("tpu-v5e-4x4", 0), ("tpu-v6e-16x16", 1),
]


@pytest.mark.parametrize("system, axis", CASES)
@pytest.mark.parametrize("size", [2**28, 2**30])
def test_ring_all_gather_is_within_10_percent_of_the_scaling_book(system, axis, size):
    topo = build_topology(load_arch(system))
    group, axes, wraps = torus_case(topo, axis)
    link = next(iter(topo.links.values()))
    latency, bandwidth = scaling_book_all_gather_terms(size, axes, wraps, link.bandwidth_bytes_per_s, link.latency_s)
    assert bandwidth > 20 * latency  # the book's bandwidth-bound regime
    simulated = simulate_collective(topo, "all-gather", size, group=group).latency_s
    assert simulated == pytest.approx(max(latency, bandwidth), rel=0.10)


def test_the_book_gives_no_formula_for_mixed_wraparound():
    assert scaling_book_all_gather_terms(1e9, [4, 4], [True, False], 45e9, 1e-6) is None
