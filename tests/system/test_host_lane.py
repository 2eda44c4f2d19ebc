"""A replay with a host timeline draws the host issuing each op on its own ``host`` lane of
the Perfetto timeline; the lane is not communication and not a device op."""

from __future__ import annotations

import pytest

from accelsim.system.replay import ReplayOptions, replay
from accelsim.system.timeline import chrome_trace, exposed_comm_by_op
from tests.system.conftest import compute, spmd

US = 1e-6


def host_spans(result) -> dict[str, tuple[float, float]]:
    """Per op, its host span on class 0, in microseconds."""
    return {s.name: (s.start_ps / 1e6, s.end_ps / 1e6) for s in result.host_segments if s.track == 0}


def test_the_host_lane_holds_each_issue(dgx):
    """The host issues back to back until it waits: after k1 (a sync) ends at 205 us, k2's
    issue runs from 205 to 210 us; an op issued at no cost draws no span."""
    ops = [compute("k0", 100 * US, host_s=5 * US), compute("k1", 100 * US, host_s=5 * US, host_sync=True),
           compute("k2", 100 * US, host_s=5 * US), compute("free", 1 * US)]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    spans = host_spans(r)
    assert set(spans) == {"k0", "k1", "k2"}
    assert spans["k0"] == pytest.approx((0, 5))
    assert spans["k1"] == pytest.approx((5, 10))
    assert spans["k2"] == pytest.approx((205, 210))
    device = {s.name: s.start_ps / 1e6 for s in r.segments if s.track == 0}
    assert device["k2"] == pytest.approx(210)  # the device op starts when its issue ends


def test_the_host_lane_is_neither_communication_nor_a_kernel(dgx):
    """A 100 MB all-reduce issued after 5 us of host time: its exposed share is the same
    with and without the host lane's spans in the timeline, and Perfetto gets a host track."""
    ops = [compute("k0", 10 * US, host_s=5 * US),
           {"name": "ar", "kind": "all-reduce", "bytes": 1e8, "deps": ["k0"], "host_s": 5 * US}]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    exposed = exposed_comm_by_op(r)
    assert set(exposed) == {(0, "ar")}
    assert exposed[(0, "ar")] == pytest.approx(r.devices[0].exposed_comm_s)
    tids = {e.get("tid") for e in chrome_trace(r)["traceEvents"] if e.get("ph") == "X"}
    assert "host" in tids


def test_no_host_timeline_no_host_lane(dgx):
    r = replay(spmd([compute("a", 3 * US), compute("b", 2 * US)]), dgx, options=ReplayOptions(timeline=True))
    assert not r.host_segments and not [s for s in r.segments if s.lane == "host"]


def test_a_stream_named_host_is_still_a_stream(dgx):
    """The host lane is told apart by its segments' kind, not the lane's name: an all-reduce a
    trace puts on a stream it calls ``host`` still counts as exposed communication."""
    ops = [compute("k0", 10 * US), {"name": "ar", "kind": "all-reduce", "bytes": 1e8, "deps": ["k0"], "stream": "host"}]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    assert exposed_comm_by_op(r)[(0, "ar")] == pytest.approx(r.devices[0].exposed_comm_s)
    assert r.devices[0].exposed_comm_s > 0
