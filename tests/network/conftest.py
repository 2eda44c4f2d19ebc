"""Fixtures: ideal topologies with round numbers, so closed forms are exact."""

import pytest

from accelsim.network.topology import switch_node, torus

GB = 1e9


@pytest.fixture
def ideal_node():
    """8 GPUs on a switch, 100 GB/s up and down each, latencies as given (default 0)."""

    def make(*, gpus=8, hop_latency_s=0.0, switch_latency_s=0.0, launch_s=0.0, nvls=True):
        return switch_node(name="ideal-node", gpus=gpus, uplink_bytes_per_s=100 * GB, hop_latency_s=hop_latency_s,
                           switch_latency_s=switch_latency_s, nvls=nvls, launch_s=launch_s)

    return make


@pytest.fixture
def ideal_torus():
    """Chips on a torus, 50 GB/s per link and direction, no latencies."""

    def make(shape, wraparound, *, hop_latency_s=0.0):
        return torus(name="ideal-torus", shape=tuple(shape), wraparound=tuple(wraparound),
                     link_bytes_per_s=50 * GB, hop_latency_s=hop_latency_s, launch_s=0.0)

    return make
