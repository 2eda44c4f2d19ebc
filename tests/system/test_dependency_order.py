"""Ops start when their dependencies and their stream allow, not before."""

from __future__ import annotations

import pytest

from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import compute, programs, spmd


def segments(result):
    return {s.name: (s.start_ps, s.end_ps) for s in result.segments if s.track == 0}


def test_one_stream_runs_in_list_order(dgx):
    r = replay(spmd([compute("a", 1e-3), compute("b", 2e-3), compute("c", 1e-3)]), dgx,
               options=ReplayOptions(timeline=True))
    seg = segments(r)
    assert seg["a"][1] == seg["b"][0] and seg["b"][1] == seg["c"][0]
    assert r.step_time_s == pytest.approx(4e-3)


def test_a_dependency_on_another_stream_waits(dgx):
    ops = [compute("a", 2e-3, stream="s1"), compute("b", 1e-3, stream="s2", deps=["a"])]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    assert segments(r)["b"][0] == segments(r)["a"][1]


def test_forward_dependency_is_honoured(dgx):
    ops = [compute("late_reader", 1e-3, stream="s1", deps=["writer"]), compute("writer", 1e-3, stream="s2")]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    assert segments(r)["late_reader"][0] == segments(r)["writer"][1]


def test_control_dependency_orders_like_a_data_dependency(dgx):
    ops = [compute("a", 1e-3, stream="s1"), compute("b", 1e-3, stream="s2", ctrl_deps=["a"])]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    assert segments(r)["b"][0] == segments(r)["a"][1]


def test_ops_after_a_collective_wait_for_every_member(dgx):
    """Device 1 computes longer before the all-reduce; device 0's next op waits for it."""
    ar = {"name": "ar", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 1]]}
    trace = programs([
        {"name": "fast", "devices": [0], "ops": [compute("pre", 1e-3), ar, compute("post", 1e-3)]},
        {"name": "slow", "devices": [1], "ops": [compute("pre", 5e-3), ar, compute("post", 1e-3)]},
    ], num_devices=2)
    r = replay(trace, dgx, options=ReplayOptions(timeline=True))
    post = [s for s in r.segments if s.name == "post"]
    assert len(post) == 2 and post[0].start_ps == post[1].start_ps
    assert post[0].start_ps > 5e-3 * 1e12
    fast = r.devices[0]
    assert fast.idle_s == pytest.approx(4e-3, rel=1e-6)  # waiting for the slow peer is idle time
