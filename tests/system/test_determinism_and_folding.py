"""Replays are deterministic, and folding interchangeable devices changes nothing."""

from __future__ import annotations

import pytest

from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import compute, programs, spmd

STEP = [
    compute("fwd", 3e-4),
    {"name": "ag", "kind": "all-gather", "bytes": 32 << 20, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]], "async": True},
    compute("bwd", 6e-4),
    {"name": "rs", "kind": "reduce-scatter", "bytes": 64 << 20, "deps": ["bwd", "ag"], "async": True},
    compute("opt", 1e-4, stream="opt", deps=["rs"]),
]


def test_two_replays_give_identical_results(dgx):
    a = replay(spmd(STEP), dgx, options=ReplayOptions(timeline=True))
    b = replay(spmd(STEP), dgx, options=ReplayOptions(timeline=True))
    assert a.summary() | {"sim_wall_s": 0} == b.summary() | {"sim_wall_s": 0}
    assert a.segments == b.segments


def test_folded_and_unfolded_replays_agree(dgx):
    folded = replay(spmd(STEP), dgx)
    unfolded = replay(spmd(STEP), dgx, options=ReplayOptions(fold=False))
    assert len(folded.classes) == 1 and len(unfolded.classes) == 8
    assert folded.step_time_s == unfolded.step_time_s
    assert folded.devices == unfolded.devices
    # the folded class plays the groups of device 0 only; the others' links are credited
    # with what their played translate carried
    assert folded.comm_instances + folded.comm_groups_folded == unfolded.comm_instances
    assert folded.comm_groups_folded > 0
    expected = {l.link: l.bytes for l in unfolded.links}
    assert {l.link: l.bytes for l in folded.links} == pytest.approx(expected, rel=1e-12)


def test_groups_that_share_links_are_all_played():
    """On a 4x4 torus, pairs (0, 2) and (1, 3) along one row both cross the link 1 -> 2:
    both groups are simulated, so they slow each other as they do unfolded."""
    from accelsim.arch.model import load_arch

    torus = load_arch("tpu-v5e-4x4")
    ops = [{"name": "ar", "kind": "all-reduce", "bytes": 64 << 20, "groups": [[0, 2], [1, 3]]}]
    folded = replay(spmd(ops, devices="0-3", num_devices=16), torus)
    unfolded = replay(spmd(ops, devices="0-3", num_devices=16), torus, options=ReplayOptions(fold=False))
    assert folded.comm_groups_folded == 0 and folded.comm_instances == 2
    assert folded.step_time_s == unfolded.step_time_s


def test_a_pipeline_chain_is_not_folded(dgx):
    """Stage d receives from d-1 and sends to d+1: devices differ, so each runs alone."""
    ops = [
        {"name": "recv", "kind": "recv", "peer_offset": -1, "bytes": 1 << 20},
        compute("stage", 1e-4, deps=["recv"]),
        {"name": "send", "kind": "send", "peer_offset": 1, "bytes": 1 << 20, "deps": ["stage"]},
    ]
    trace = programs([
        {"name": "first", "devices": [0], "ops": [compute("stage", 1e-4), ops[2]]},
        {"name": "middle", "devices": ["1-6"], "ops": ops},
        {"name": "last", "devices": [7], "ops": ops[:2]},
    ])
    r = replay(trace, dgx)
    assert len(r.classes) == 8
    finish = [d.finish_s for d in r.devices]
    assert finish == sorted(finish) and finish[0] < finish[-1]


def _agree(trace, system):
    folded = replay(trace, system)
    unfolded = replay(trace, system, options=ReplayOptions(fold=False))
    assert folded.step_time_s == unfolded.step_time_s
    assert max(l.utilization for l in folded.links) <= 1 + 1e-9
    return folded


def test_groups_whose_links_another_collective_loads_are_all_played():
    """Rows and pairs of a 4x4 torus, on two streams: the pair (8, 9) shares a link with
    row 2's ring. Playing row 0 alone (whose links no pair touches) missed that: the step
    came out as the rows alone and a link at 167% of its bandwidth."""
    from accelsim.arch.model import load_arch

    rows = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    pairs = [[0, 4], [1, 5], [2, 6], [3, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    ops = [{"name": "rows", "kind": "all-reduce", "bytes": 16 << 20, "stream": "a", "groups": rows},
           {"name": "pairs", "kind": "all-reduce", "bytes": 16 << 20, "stream": "b", "groups": pairs}]
    torus = load_arch("tpu-v5e-4x4")
    alone = replay(spmd(ops[:1], devices="0-15", num_devices=16), torus)
    r = _agree(spmd(ops, devices="0-15", num_devices=16), torus)
    assert r.step_time_s > 1.5 * alone.step_time_s


def test_another_programs_transfer_on_an_unplayed_groups_links_is_seen():
    from accelsim.arch.model import load_arch

    trace = programs([
        {"name": "P", "devices": [0, 3, 4, 7],
         "ops": [{"name": "ar", "kind": "all-reduce", "bytes": 16 << 20, "groups": [[0, 3], [4, 7]]}]},
        {"name": "Q5", "devices": [5], "ops": [{"name": "s", "kind": "send", "peer": 6, "bytes": 16 << 20}]},
        {"name": "Q6", "devices": [6], "ops": [{"name": "r", "kind": "recv", "peer": 5, "bytes": 16 << 20}]},
    ], num_devices=16)
    _agree(trace, load_arch("tpu-v5e-4x4"))


def test_link_disjoint_groups_that_are_not_translates_are_all_played():
    """(0, 1) is one hop on a 4x4 torus, (4, 12) two: disjoint links, different times."""
    from accelsim.arch.model import load_arch

    ops = [{"name": "ar", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 1], [4, 12]]}]
    torus = load_arch("tpu-v5e-4x4")
    r = _agree(programs([{"name": "spmd", "devices": [0, 1, 4, 12], "ops": ops}], num_devices=16), torus)
    assert r.comm_groups_folded == 0
    near = [{"name": "ar", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 1]]}]
    assert r.step_time_s > replay(programs([{"name": "p", "devices": [0, 1], "ops": near}], num_devices=16),
                                  torus).step_time_s


def test_a_class_playing_several_groups_takes_one_groups_hbm_share_per_device(dgx):
    """The all-gathers of both quads share the NVSwitch with the pairs' all-reduces, so the
    folded class plays every group; each device is in one of each, so memory-bound compute
    beside them loses one group's HBM share of each (the class took every group's until
    2026-12-07: 1372.2 us folded, 1352.6 us unfolded)."""
    ops = [{"name": "ag", "kind": "all-gather", "bytes": 32 << 20, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]],
            "async": True},
           {"name": "tp", "kind": "all-reduce", "bytes": 8 << 20, "groups": [[0, 1], [2, 3], [4, 5], [6, 7]]},
           {"name": "stream", "kind": "compute", "bytes": 4e9, "stream": "side"}]
    folded = replay(spmd(ops), dgx)
    unfolded = replay(spmd(ops), dgx, options=ReplayOptions(fold=False))
    assert folded.comm_groups_folded == 0
    assert folded.step_time_s == unfolded.step_time_s
    assert folded.devices == unfolded.devices
