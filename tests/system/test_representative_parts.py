"""A collective planned as one representative part (a node's share of a cross-node
ring, the rings through one torus chip) is played whole when other traffic meets one of
its other parts, so mirror-image traces replay alike."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import programs

MIB = 2**20


@pytest.fixture(scope="module")
def two_nodes():
    return load_arch("h100-ib-cluster", ["nodes=2"])


@pytest.fixture(scope="module")
def v5e():
    return load_arch("tpu-v5e-4x4")


def _all_reduce_beside(system, nbytes: int, members: list[int], n: int = 16) -> float:
    """Step time of an all-reduce over all ``n`` devices beside one over ``members``."""
    extra = {"name": "small", "kind": "all-reduce", "bytes": nbytes, "groups": [members]}
    return _times(_beside(list(range(n)), "all-reduce", nbytes, extra, members, n), system)[0]


def _beside(group: list[int], kind: str, nbytes: int, extra: dict, extra_devices: list[int], n: int):
    """A collective over ``group`` on every device, and ``extra`` on ``extra_devices`` at once."""
    others = [d for d in range(n) if d not in extra_devices]
    main = {"name": "main", "kind": kind, "bytes": nbytes, "groups": [group], "stream": "s1"}
    progs = [{"name": "busy", "devices": _devices(extra_devices), "ops": [main, {**extra, "stream": "s2"}]}]
    if others:
        progs.append({"name": "plain", "devices": _devices(others), "ops": [main]})
    return programs(progs, n)


def _devices(ds: list[int]) -> list[int]:
    return list(ds)


def _times(trace, system) -> tuple[float, float]:
    folded = replay(trace, system)
    unfolded = replay(trace, system, options=ReplayOptions(fold=False))
    assert folded.step_time_s == unfolded.step_time_s
    assert folded.devices == unfolded.devices
    return folded.step_time_s, folded.devices


def test_a_node_all_reduce_beside_a_cross_node_one_costs_the_same_on_either_node(two_nodes):
    everyone = list(range(16))
    alone = replay(programs([{"name": "a", "devices": ["0-15"], "ops": [
        {"name": "main", "kind": "all-reduce", "bytes": 512 * MIB, "groups": [everyone]}]}], 16), two_nodes)
    steps = [_all_reduce_beside(two_nodes, 512 * MIB, list(range(8 * node, 8 * node + 8))) for node in (0, 1)]
    assert steps[0] == steps[1]
    assert steps[1] > 1.5 * alone.step_time_s  # they share every NVLink of the node


def test_a_send_on_any_rail_meets_a_cross_node_all_reduce_alike(two_nodes):
    everyone = list(range(16))
    steps = []
    for gpu in (0, 3):
        extra = {"name": "send", "kind": "send", "bytes": 256 * MIB, "peer": gpu + 8}
        recv = {"name": "recv", "kind": "recv", "bytes": 256 * MIB, "peer": gpu}
        main = {"name": "main", "kind": "all-reduce", "bytes": 512 * MIB, "groups": [everyone], "stream": "s1"}
        others = [d for d in range(16) if d not in (gpu, gpu + 8)]
        trace = programs([
            {"name": "sender", "devices": [gpu], "ops": [main, {**extra, "stream": "s2"}]},
            {"name": "receiver", "devices": [gpu + 8], "ops": [main, {**recv, "stream": "s2"}]},
            {"name": "plain", "devices": _devices(others), "ops": [main]},
        ], 16)
        steps.append(_times(trace, two_nodes)[0])
    assert steps[0] == pytest.approx(steps[1], rel=1e-9)


def test_a_row_all_reduce_beside_a_whole_slice_one_costs_the_same_on_any_row(v5e):
    steps = [_all_reduce_beside(v5e, 256 * MIB, list(range(4 * row, 4 * row + 4))) for row in (0, 2)]
    assert steps[0] == steps[1]


def test_a_collective_alone_keeps_its_representative_part(two_nodes):
    """Nothing else runs: one node's part is played (few links simulated) and the time is
    what the collective takes alone."""
    trace = programs([{"name": "a", "devices": ["0-15"], "ops": [
        {"name": "main", "kind": "all-reduce", "bytes": 512 * MIB, "groups": [list(range(16))]}]}], 16)
    r = replay(trace, two_nodes)
    alone = replay(trace, two_nodes, options=ReplayOptions(fold=False))
    gpus = {int(end[3:]) for l in r.links for end in l.link.split("->") if end.startswith("gpu")}
    assert gpus == set(range(8))  # node 0's
    assert r.step_time_s == alone.step_time_s
