"""Replays are deterministic, and folding interchangeable devices changes nothing."""

from __future__ import annotations

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
    assert folded.links == unfolded.links


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
