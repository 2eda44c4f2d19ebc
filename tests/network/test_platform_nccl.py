"""What a cluster's platform changes in NCCL's choices: the protocols and NVLS its NCCL
environment allows, NCCL's LL ceiling across nodes (by host CPU and node count), and a
cloud tuner plugin's algorithm and protocol regions."""

import dataclasses

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology, simulate_collective
from accelsim.network.nccl_tables import ll_max_bus_bytes_per_s
from accelsim.network.tuners import tuner_choices

MIB = 2**20


def _run(system, size, algorithm="auto", overrides=()):
    return simulate_collective(build_topology(load_arch(system, list(overrides))), "all-reduce", size, algorithm)


def test_llmaxbws_rows_by_host_cpu_and_columns_by_node_count():
    assert ll_max_bus_bytes_per_s("intel", 2) == pytest.approx(39.0e9)
    assert ll_max_bus_bytes_per_s("arm", 4) == pytest.approx(20.4e9)  # every non-AMD host takes the Intel row
    assert ll_max_bus_bytes_per_s("amd", 2) == pytest.approx(22.5e9)
    assert ll_max_bus_bytes_per_s("amd", 16) == pytest.approx(19.0e9)


@pytest.mark.parametrize("nodes, cpu", [(2, "intel"), (4, "intel"), (2, "amd")])
def test_ring_ll_across_nodes_never_beats_nccls_ceiling(nodes, cpu):
    overrides = (f"nodes={nodes}", f"network.host_cpu={cpu}")
    result = _run("h100-ib-cluster", 256 * MIB, "ring/ll", overrides)
    assert result.busbw_bytes_per_s <= ll_max_bus_bytes_per_s(cpu, nodes) * (1 + 1e-9)
    assert result.busbw_bytes_per_s > 0.8 * ll_max_bus_bytes_per_s(cpu, nodes)  # and it binds at this size


def test_one_node_ll_is_not_capped_by_the_across_nodes_row():
    one_node = simulate_collective(build_topology(load_arch("dgx-h100")), "all-reduce", 256 * MIB, "ring/ll")
    assert one_node.busbw_bytes_per_s > 2 * ll_max_bus_bytes_per_s("intel", 2)


def test_a_simple_only_platform_runs_simple_everywhere():
    topo = build_topology(load_arch("gcp-a3-mega"))
    assert list(topo.tuning.protocols) == ["simple"] and not topo.nvls
    for size in (8, 64 * 1024, 8 * MIB, 2**30):
        assert simulate_collective(topo, "all-reduce", size).protocol == "simple"
    with pytest.raises(InputError, match="unknown protocol 'll'"):
        simulate_collective(topo, "all-reduce", 1024, "ring/ll")


def test_a_platform_allowing_no_protocol_is_refused():
    with pytest.raises(InputError, match="network.nccl_protocols"):
        load_arch("gcp-a3-mega", ["network.nccl_protocols=[]"])


def test_the_aws_p6_tuner_leaves_two_nodes_to_nccl_and_picks_from_three():
    assert tuner_choices("aws-ofi-p6", "all-reduce", 2**30, 16, 2, 8) == []
    assert tuner_choices("aws-ofi-p6", "all-reduce", 2**30, 32, 4, 7) == []  # not 8 ranks per node
    assert tuner_choices("aws-ofi-p6", "all-gather", 2**30, 32, 4, 8) == []  # no regions transcribed for it
    assert tuner_choices("aws-ofi-p6", "all-reduce", 64 * 1024, 32, 4, 8)[0] == ("tree", "ll")
    assert tuner_choices("aws-ofi-p6", "all-reduce", 2 * MIB, 32, 4, 8)[0] == ("tree", "ll128")
    assert tuner_choices("aws-ofi-p6", "all-reduce", 256 * MIB, 32, 4, 8)[0] == ("nvls-tree", "simple")
    assert tuner_choices("aws-ofi-p6", "all-reduce", 4 * 2**30, 32, 4, 8)[0] == ("ring", "simple")
    assert tuner_choices("aws-ofi-p6", "all-reduce", 4 * 2**30, 512, 64, 8)[0] == ("nvls-tree", "simple")


def test_the_p6_preset_runs_what_its_tuner_picks_where_the_model_would_pick_otherwise():
    tuned = _run("aws-p6-b200", 4 * 2**30)
    assert (tuned.algorithm, tuned.protocol) == ("ring", "simple")
    own = dataclasses.replace(build_topology(load_arch("aws-p6-b200")), tuner=None, _plans={})
    untuned = simulate_collective(own, "all-reduce", 4 * 2**30)
    assert untuned.algorithm == "nvls-tree"  # the model's own estimate prefers NVLS-tree here
