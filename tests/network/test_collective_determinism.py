"""Same inputs, same picoseconds; plan order does not change anyone's finish time."""

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import Request, get_algorithm
from accelsim.network.simulate import run_plans


def test_repeated_runs_are_identical():
    topo = build_topology(load_arch("tpu-v5p-4x4x8"))
    first = [simulate_collective(topo, "all-reduce", s) for s in (8, 2**20, 2**33)]
    again = [simulate_collective(topo, "all-reduce", s) for s in (8, 2**20, 2**33)]
    assert first == again


def test_plan_order_does_not_matter(ideal_node):
    topo = ideal_node()
    a = get_algorithm("ring")(topo, Request(kind="all-reduce", size_bytes=3e8, ranks=tuple(range(6))))
    b = get_algorithm("nvls")(topo, Request(kind="all-reduce", size_bytes=5e8, ranks=tuple(range(2, 8))))
    assert run_plans(topo, [a, b]) == run_plans(topo, [b, a])[::-1]


def test_auto_picks_nvls_on_a_switch_that_reduces_and_ring_elsewhere(ideal_node):
    assert simulate_collective(ideal_node(), "all-reduce", 2**26).algorithm == "nvls"
    assert simulate_collective(ideal_node(nvls=False), "all-reduce", 2**26).algorithm == "ring"
    assert simulate_collective(ideal_node(), "all-gather", 2**26).algorithm == "ring"
