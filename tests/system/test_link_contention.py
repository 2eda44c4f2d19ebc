"""Concurrent collectives share the links they have in common (one link pool)."""

from __future__ import annotations

import pytest

from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import programs, spmd

SIZE = 512 * 2**20


def coll(name: str, groups, stream: str) -> dict:
    return {"name": name, "kind": "all-gather", "bytes": SIZE, "groups": groups, "stream": stream}


def test_two_collectives_on_the_same_links_take_twice_as_long(dgx):
    alone = replay(spmd([coll("x", [list(range(8))], "s1")]), dgx).step_time_s
    both = replay(spmd([coll("x", [list(range(8))], "s1"), coll("y", [list(range(8))], "s2")]), dgx).step_time_s
    launch_and_latency = 2 * alone - both  # what the two do not share
    assert both == pytest.approx(2 * alone, rel=0.05)
    assert both < 2 * alone and launch_and_latency > 0


def test_collectives_on_disjoint_links_do_not_slow_each_other(dgx):
    quad = [[0, 1, 2, 3], [4, 5, 6, 7]]
    alone = replay(programs([{"name": "a", "devices": ["0-3"], "ops": [coll("x", [quad[0]], "s1")]}]), dgx)
    both = replay(spmd([coll("x", quad, "s1")]), dgx)
    assert both.step_time_s == pytest.approx(alone.step_time_s, rel=1e-9)
    unfolded = replay(spmd([coll("x", quad, "s1")]), dgx, options=ReplayOptions(fold=False))
    assert unfolded.comm_instances == 2 and unfolded.step_time_s == both.step_time_s
    assert (both.comm_instances, both.comm_groups_folded) == (1, 1)  # the second group is a translate


def test_links_carry_the_ring_volume(dgx):
    r = replay(spmd([coll("x", [list(range(8))], "s1")]), dgx, options=ReplayOptions(algorithm="ring"))
    uplinks = [l for l in r.links if l.link.endswith("->switch")]
    per_rank = SIZE * 7 / 8  # a ring all-gather sends (n-1)/n of the output per rank
    carried = sum(l.bytes for l in uplinks)
    assert 8 * per_rank <= carried < 1.3 * 8 * per_rank  # the payload, plus NCCL protocol flags
    assert all(0 < l.utilization <= 1 for l in r.links)
