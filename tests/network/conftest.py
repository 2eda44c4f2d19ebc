"""Fixtures: ideal topologies with round numbers, so closed forms are exact."""

import pytest

from accelsim.arch.collective_tuning import CollectiveTuning, Protocol
from accelsim.network.topology import cluster, multislice, switch_node, torus

GB = 1e9


@pytest.fixture
def ideal_node():
    """8 GPUs on a switch, 100 GB/s up and down each, latencies as given (default 0)."""

    def make(*, gpus=8, hop_latency_s=0.0, switch_latency_s=0.0, launch_s=0.0, nvls=True, tuning=None):
        return switch_node(name="ideal-node", gpus=gpus, uplink_bytes_per_s=100 * GB, hop_latency_s=hop_latency_s,
                           switch_latency_s=switch_latency_s, nvls=nvls, launch_s=launch_s, tuning=tuning)

    return make


@pytest.fixture
def ideal_torus():
    """Chips on a torus, 50 GB/s per link and direction, no latencies."""

    def make(shape, wraparound, *, hop_latency_s=0.0):
        return torus(name="ideal-torus", shape=tuple(shape), wraparound=tuple(wraparound),
                     link_bytes_per_s=50 * GB, hop_latency_s=hop_latency_s, launch_s=0.0)

    return make


@pytest.fixture
def ideal_cluster():
    """Nodes of 4 GPUs (100 GB/s NVLink up and down), NICs of 10 GB/s on a non-blocking fabric."""

    def make(*, nodes=2, gpus=4, nics=4, fabric_latency_s=0.0, tuning=None, nvls=False):
        return cluster(name="ideal-cluster", nodes=nodes, gpus_per_node=gpus, uplink_bytes_per_s=100 * GB,
                       hop_latency_s=0.0, switch_latency_s=0.0, nics_per_node=nics, nic_bytes_per_s=10 * GB,
                       fabric_latency_s=fabric_latency_s, nvls=nvls, launch_s=0.0, tuning=tuning)

    return make


@pytest.fixture
def ideal_multislice():
    """Slices of 4x4 wrapped chips (50 GB/s ICI links), 5 GB/s of DCN per chip."""

    def make(*, slices=2, dcn_latency_s=0.0):
        return multislice(name="ideal-multislice", slices=slices, shape=(4, 4), wraparound=(True, True),
                          link_bytes_per_s=50 * GB, hop_latency_s=0.0, dcn_bytes_per_s=5 * GB,
                          dcn_latency_s=dcn_latency_s, launch_s=0.0)

    return make


@pytest.fixture
def tuning():
    """An NCCL model with round numbers: links at 80%, LL half efficient and capped."""

    def make(*, link_efficiency=0.8, ll_cap=None):
        protocols = {
            "ll": Protocol(name="ll", efficiency=0.5, max_bandwidth_per_rank_bytes_per_s=ll_cap,
                           base_latency_s=5e-6, step_latency_s=0.5e-6),
            "simple": Protocol(name="simple", efficiency=1.0, max_bandwidth_per_rank_bytes_per_s=None,
                               base_latency_s=10e-6, step_latency_s=3e-6),
        }
        return CollectiveTuning(link_efficiency=link_efficiency, protocols=protocols, nvls_efficiency=0.6,
                                nvls_latency_s=50e-6)

    return make
