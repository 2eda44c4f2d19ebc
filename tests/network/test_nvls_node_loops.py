"""NVLS on one node pays its pipeline: two loops of fill (scatter, reduce, gather hand a
whole loop on) and a Simple step per loop, with NCCL's NVLS chunk (128 KiB, smaller for
smaller buffers)."""

import math

import pytest

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, plan_for
from accelsim.network.nccl_tables import nvls_chunk_bytes, nvls_node_fill_s, nvls_node_loops
from accelsim.network.simulate import make_request
from accelsim.network.topology import uplink

KIB, MIB, GIB = 2**10, 2**20, 2**30


def test_chunk_follows_nccls_rule_by_size():
    # 16 channels x 8 heads = 128 concurrent chunks
    assert nvls_chunk_bytes(1 * GIB, 16, 8) == 128 * KIB
    assert nvls_chunk_bytes(64 * MIB, 16, 8) == 64 * KIB  # below 64 x 128 x 128 KiB
    assert nvls_chunk_bytes(32 * MIB, 16, 8) == 32 * KIB  # below 8 x 128 x 64 KiB
    assert nvls_chunk_bytes(4 * MIB, 16, 8) == 16 * KIB  # below 2 x 128 x 32 KiB


def test_loops_are_the_buffer_over_a_loop_of_every_channels_heads():
    assert nvls_node_loops("hopper", 1 * GIB, 8) == 64  # 16 x 8 x 128 KiB = 16 MiB a loop
    assert nvls_node_loops("hopper", 32 * MIB, 8) == 8
    assert nvls_node_loops("hopper", 1 * MIB, 8) == 1
    assert nvls_node_loops(None, 1 * GIB, 8) == 0


def test_fill_is_two_loops_at_the_rate_or_the_whole_buffer():
    assert nvls_node_fill_s("hopper", 1 * GIB, 8, 100e9) == pytest.approx(2 * 16 * MIB / 100e9)
    assert nvls_node_fill_s("hopper", 1 * MIB, 8, 100e9) == pytest.approx(2 * MIB / 100e9)
    assert nvls_node_fill_s("ampere", 1 * GIB, 8, 100e9) == 0.0


def test_the_plan_adds_fill_and_steps_to_its_phase():
    topo = build_topology(load_arch("dgx-h100"))
    plan = plan_for(topo, make_request(topo, "all-reduce", 1 * GIB), "nvls")
    tuning = topo.tuning
    rate = topo.links[uplink(0)].bandwidth_bytes_per_s * tuning.nvls_efficiency * 8 / 9
    fill = nvls_node_fill_s("hopper", 1 * GIB, 8, rate)
    steps = 64 * tuning.protocols["simple"].step_latency_s
    (phase,) = plan.lanes[0]
    assert plan.fill_s == pytest.approx(fill)
    assert phase.latency_s == pytest.approx(fill + steps)
    assert math.isclose(plan.launch_s, tuning.nvls_latency_s)
