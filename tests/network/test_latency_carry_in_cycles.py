"""A latency fitted on one node carries to another in GPU cycles: scaled by the fitted
node's kernel clock over the other's (``nccl_tables.latency_carry_scale``), so an A100 node
(1.41 GHz) pays DGX H100's (1.98 GHz) fixed costs x 1.98 / 1.41, and a node that states no
clock takes them unscaled."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import latency_carry_scale


def test_the_scale_is_the_fitted_clock_over_the_node_clock():
    assert latency_carry_scale(1.98e9, 1.41e9) == pytest.approx(1.98 / 1.41)
    assert latency_carry_scale(1.41e9, 1.98e9) == pytest.approx(1.41 / 1.98)
    assert latency_carry_scale(1.98e9, 1.98e9) == 1.0


@pytest.mark.parametrize("clocks", [(None, 1.41e9), (1.98e9, None), (None, None)])
def test_a_clock_not_stated_leaves_the_latency_unscaled(clocks):
    assert latency_carry_scale(*clocks) == 1.0


def _fixed_cost_s(name):
    """An 8-byte all-reduce on 8 GPUs: nothing but the protocol's base and step latencies."""
    return simulate_collective(build_topology(load_arch(name)), "all-reduce", 8).latency_s


def test_an_a100_node_pays_the_h100_fixed_cost_in_its_own_cycles():
    h100, a100 = load_arch("dgx-h100").collectives, load_arch("dgx-a100").collectives
    scale = latency_carry_scale(h100.kernel_clock_hz, a100.kernel_clock_hz)
    assert scale == pytest.approx(1.98 / 1.41)
    for name, proto in h100.protocols.items():
        assert a100.protocols[name].base_latency_s == pytest.approx(proto.base_latency_s * scale, rel=1e-3)
        assert a100.protocols[name].step_latency_s == pytest.approx(proto.step_latency_s * scale, rel=1e-3)
        assert a100.protocols[name].net_step_latency_s == proto.net_step_latency_s  # the network's, not the GPU's
    assert _fixed_cost_s("dgx-a100") == pytest.approx(_fixed_cost_s("dgx-h100") * scale, rel=1e-3)


def test_a_node_of_the_same_clock_takes_the_fitted_latencies_as_they_are():
    h100, h200 = load_arch("dgx-h100").collectives, load_arch("dgx-h200").collectives
    assert h200.kernel_clock_hz == h100.kernel_clock_hz
    assert _fixed_cost_s("dgx-h200") == pytest.approx(_fixed_cost_s("dgx-h100"), rel=1e-9)
