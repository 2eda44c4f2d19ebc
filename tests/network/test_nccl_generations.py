"""NCCL's model by architecture class: the node configs start from NCCL's own tables, and a
fit on one node carries to the others as NCCL's tables are shared (latencies to every
node, bandwidth figures within a class)."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import (
    CYCLE_RATE_PATHS, GENERATIONS, LATENCY_PATHS, LL128_CHANNELS, RING_BASE_LATENCY_S, RING_NET_STEP_S, RING_NVLINK_STEP_S, carries_to,
    latency_carry_scale,
)
from accelsim.validate.collectives import PARAMETERS

PUBLISHED = {"dgx-a100-published": "ampere", "dgx-h100-published": "hopper", "dgx-h200-published": "hopper",
             "dgx-b200-published": "blackwell"}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_nodes_carry_ncclls_own_figures_for_their_class(name):
    tuning = load_arch(name).collectives
    assert tuning.generation == PUBLISHED[name]
    for proto, p in tuning.protocols.items():
        assert p.base_latency_s == pytest.approx(RING_BASE_LATENCY_S[proto])
        assert p.step_latency_s == pytest.approx(RING_NVLINK_STEP_S[proto])
        assert p.net_step_latency_s == pytest.approx(RING_NET_STEP_S[proto])
    cap = tuning.protocols["ll128"].max_bandwidth_per_rank_bytes_per_s
    assert cap == pytest.approx(GENERATIONS[PUBLISHED[name]].ll128_channel_bytes_per_s * LL128_CHANNELS)


def test_latencies_carry_everywhere_bandwidth_only_within_a_class():
    assert carries_to("protocols.ll.base_latency", "hopper", "blackwell")
    assert carries_to("nvls_latency", "hopper", "ampere")
    assert carries_to("link_efficiency", "hopper", "hopper")
    assert not carries_to("link_efficiency", "hopper", "blackwell")
    assert not carries_to("nvls_efficiency", "hopper", None)
    assert all(carries_to(p.path, "hopper", "hopper") for p in PARAMETERS)  # every fitted field has a rule


def _values(name):
    tuning = load_arch(name).collectives
    return {p.path: p.get(tuning) for p in PARAMETERS}


def test_the_plain_names_hold_what_carries_from_the_dgx_h100_fit():
    fitted = _values("dgx-h100")
    assert fitted != _values("dgx-h100-published")
    assert _values("dgx-h200") == fitted  # same class and clock: everything carries as fitted
    for node in ("dgx-b200", "dgx-a100"):
        tuning = load_arch(node).collectives
        scale = latency_carry_scale(load_arch("dgx-h100").collectives.kernel_clock_hz, tuning.kernel_clock_hz)
        own, published = _values(node), _values(f"{node}-published")
        for path, value in own.items():
            if published[path] is None or not carries_to(path, "hopper", tuning.generation):
                assert value == published[path]
            else:
                factor = scale if path in LATENCY_PATHS else 1 / scale if path in CYCLE_RATE_PATHS else 1.0
                assert value == pytest.approx(fitted[path] * factor, rel=1e-3)


def test_a_b200_node_costs_what_an_h100_node_does_at_8_bytes():
    """8 bytes are all fixed cost: NCCL's latencies are one table, so the fitted ones carry
    (the published B200 was 11% faster than the fitted H100 here, for no reason)."""
    times = {name: simulate_collective(build_topology(load_arch(name)), "all-reduce", 8).latency_s
             for name in ("dgx-h100", "dgx-b200")}
    assert times["dgx-b200"] == pytest.approx(times["dgx-h100"], rel=1e-4)
