"""A replay's exposed communication, op by op: each communication op owns the time it is
in flight while its class computes nothing, shared equally among ops in flight at once,
and the ops' shares sum to the class's exposed communication."""

from __future__ import annotations

import math

from accelsim.system.replay import ReplayOptions, replay
from accelsim.system.timeline import exposed_comm_by_op
from tests.system.conftest import compute, spmd

MiB = 1 << 20


def run(ops, system):
    result = replay(spmd(ops), system, options=ReplayOptions(timeline=True))
    spans = {seg.name: (seg.start_ps, seg.end_ps) for seg in result.segments if seg.lane != "comm"}
    return result, spans, exposed_comm_by_op(result)


def seconds(span):
    return (span[1] - span[0]) / 1e12


def test_a_synchronous_collective_is_exposed_for_its_whole_run_and_an_async_one_beyond_the_work_beside_it(dgx):
    ops = [compute("a", 1e-4),
           {"name": "sync", "kind": "all-reduce", "bytes": 64 * MiB, "deps": ["a"]},
           {"name": "gather", "kind": "all-gather", "bytes": 256 * MiB, "async": True, "deps": ["sync"]},
           compute("b", 1e-4, deps=["sync"]),
           {"name": "wait", "kind": "done", "start": "gather"}]
    result, spans, exposed = run(ops, dgx)
    assert math.isclose(exposed[(0, "sync")], seconds(spans["sync"]), rel_tol=1e-9)
    beside = seconds(spans["gather"]) - seconds(spans["b"])
    assert beside > 0  # the gather outlasts b: part of it is exposed
    assert math.isclose(exposed[(0, "gather")], beside, rel_tol=1e-9)
    assert math.isclose(sum(exposed.values()), result.devices[0].exposed_comm_s, rel_tol=1e-9)


def test_ops_in_flight_together_with_nothing_computing_share_the_time(dgx):
    ops = [{"name": "one", "kind": "all-gather", "bytes": 64 * MiB, "async": True},
           {"name": "two", "kind": "all-gather", "bytes": 64 * MiB, "async": True},
           {"name": "wait1", "kind": "done", "start": "one"},
           {"name": "wait2", "kind": "done", "start": "two"}]
    result, spans, exposed = run(ops, dgx)
    assert spans["one"] == spans["two"]
    assert math.isclose(exposed[(0, "one")], seconds(spans["one"]) / 2, rel_tol=1e-9)
    assert math.isclose(exposed[(0, "one")], exposed[(0, "two")], rel_tol=1e-12)
    assert math.isclose(sum(exposed.values()), result.devices[0].exposed_comm_s, rel_tol=1e-9)
