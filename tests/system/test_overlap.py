"""Compute and communication overlap where dependencies allow, and only there."""

from __future__ import annotations

import pytest

from accelsim.network import build_topology, simulate_collective
from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import compute, spmd

SIZE = 256 * 2**20
NO_INTERFERENCE = ReplayOptions(comm_sm_fraction=0.0, comm_hbm_fraction=0.0)


@pytest.fixture(scope="module")
def ar_alone_s(dgx):
    return simulate_collective(build_topology(dgx), "all-reduce", SIZE).latency_s


def ar(**extra) -> dict:
    return {"name": "ar", "kind": "all-reduce", "bytes": SIZE, **extra}


def test_a_lone_collective_takes_its_own_time(dgx, ar_alone_s):
    r = replay(spmd([ar()]), dgx)
    assert r.step_time_s == pytest.approx(ar_alone_s, rel=1e-9)
    assert r.summary()["exposed_comm_s"] == pytest.approx(ar_alone_s, rel=1e-9)


def test_sync_collective_serialises_with_compute(dgx, ar_alone_s):
    r = replay(spmd([compute("a", 1e-3), ar(deps=["a"]), compute("b", 1e-3)]), dgx, options=NO_INTERFERENCE)
    assert r.step_time_s == pytest.approx(2e-3 + ar_alone_s, rel=1e-9)
    assert r.summary()["overlapped_comm_s"] == 0


def test_async_window_overlaps_compute(dgx, ar_alone_s):
    ops = [compute("a", 1e-3), ar(deps=["a"], **{"async": True}), compute("b", 1e-3),
           {"name": "done", "kind": "done", "start": "ar"}]
    r = replay(spmd(ops), dgx, options=NO_INTERFERENCE)
    assert ar_alone_s < 1e-3  # so the collective hides entirely behind b
    assert r.step_time_s == pytest.approx(2e-3, rel=1e-9)
    s = r.summary()
    assert s["overlapped_comm_s"] == pytest.approx(ar_alone_s, rel=1e-9) and s["exposed_comm_s"] == 0


def test_a_reader_of_the_async_result_waits_for_it(dgx, ar_alone_s):
    ops = [ar(**{"async": True}), compute("uses_result", 1e-4, deps=["ar"])]
    r = replay(spmd(ops), dgx, options=NO_INTERFERENCE)
    assert r.step_time_s == pytest.approx(ar_alone_s + 1e-4, rel=1e-9)


def test_a_separate_comm_stream_overlaps_like_async(dgx, ar_alone_s):
    ops = [compute("a", 1e-3, stream="compute"), ar(deps=["a"], stream="comm"), compute("b", 1e-3, stream="compute")]
    r = replay(spmd(ops), dgx, options=NO_INTERFERENCE)
    assert r.step_time_s == pytest.approx(2e-3, rel=1e-9)


def test_gpu_collective_slows_concurrent_compute(dgx, ar_alone_s):
    """While the collective runs, b progresses at 1 - comm_sm_fraction of its speed."""
    ops = [ar(**{"async": True}), compute("b", 1e-3)]
    r = replay(spmd(ops), dgx, options=ReplayOptions(comm_sm_fraction=0.25))
    expected = 1e-3 + ar_alone_s * 0.25  # b loses a quarter of its speed for ar_alone_s
    assert r.step_time_s == pytest.approx(expected, rel=1e-6)


def test_two_compute_streams_share_the_device(dgx):
    ops = [compute("a", 1e-3, stream="s1"), compute("b", 1e-3, stream="s2")]
    r = replay(spmd(ops), dgx)
    assert r.step_time_s == pytest.approx(2e-3, rel=1e-9)
