"""A replay keeps the host's issue spans (``ReplayResult.host_segments``, the ``host`` lane)
apart from the devices' spans (``segments``): a reader of the devices' ops, streams and
communication needs no filter, and the Perfetto timeline still draws both, the devices'
spans first."""

from __future__ import annotations

from accelsim.system.replay import HOST_LANE, ReplayOptions, replay
from accelsim.system.timeline import chrome_trace
from tests.system.conftest import compute, spmd

US = 1e-6


def _replayed(dgx):
    ops = [compute("k0", 10 * US, host_s=5 * US),
           {"name": "ar", "kind": "all-reduce", "bytes": 1e8, "deps": ["k0"], "host_s": 5 * US}]
    return replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))


def test_the_devices_spans_hold_no_host_span(dgx):
    r = _replayed(dgx)
    assert r.segments and all(s.kind != HOST_LANE and s.lane != HOST_LANE for s in r.segments)


def test_the_host_spans_are_one_per_op_issued_at_a_cost(dgx):
    r = _replayed(dgx)
    assert sorted(s.name for s in r.host_segments if s.track == 0) == ["ar", "k0"]
    assert all(s.kind == HOST_LANE and s.lane == HOST_LANE for s in r.host_segments)


def test_the_timeline_draws_the_devices_spans_then_the_hosts(dgx):
    r = _replayed(dgx)
    drawn = [(e["pid"] - 1, e["tid"], e["name"], e["cat"]) for e in chrome_trace(r)["traceEvents"] if e["ph"] == "X"]
    expected = [(s.track, s.lane, s.name, s.kind) for s in (*r.segments, *r.host_segments)]
    assert drawn == expected


def test_without_a_timeline_there_are_none(dgx):
    r = replay(spmd([compute("k0", 10 * US, host_s=5 * US)]), dgx)
    assert r.segments == () and r.host_segments == ()
