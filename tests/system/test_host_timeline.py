"""The host issues a program's ops in list order (``host_s`` each); an op starts no earlier
than it is issued, and after a ``host_sync`` op the host waits for it to finish."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError
from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import compute, spmd

US = 1e-6


def starts(result) -> dict[str, float]:
    return {s.name: s.start_ps / 1e6 for s in result.segments if s.track == 0 and s.lane != "host"}  # microseconds


def run(ops, dgx):
    return replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))


def test_short_kernels_wait_for_the_host(dgx):
    """Kernels of 1 us issued every 5 us: the device runs each as it is issued."""
    r = run([compute(f"k{i}", 1 * US, host_s=5 * US) for i in range(4)], dgx)
    assert [starts(r)[f"k{i}"] for i in range(4)] == pytest.approx([5, 10, 15, 20])
    assert r.step_time_s == pytest.approx(21 * US)


def test_long_kernels_hide_the_host(dgx):
    """The host runs ahead of 100 us kernels: only the first launch is exposed."""
    r = run([compute(f"k{i}", 100 * US, host_s=5 * US) for i in range(4)], dgx)
    assert r.step_time_s == pytest.approx(405 * US)


def test_a_sync_exposes_the_next_launch(dgx):
    """After the host waits for k1, k2 is issued 5 us after k1 ends, not queued behind it."""
    ops = [compute("k0", 100 * US, host_s=5 * US), compute("k1", 100 * US, host_s=5 * US, host_sync=True),
           compute("k2", 100 * US, host_s=5 * US)]
    r = run(ops, dgx)
    assert starts(r)["k2"] == pytest.approx(205 + 5)
    assert r.step_time_s == pytest.approx(310 * US)


def test_no_host_time_is_the_plain_replay(dgx):
    plain = run([compute("a", 3 * US), compute("b", 2 * US)], dgx)
    zero = run([compute("a", 3 * US, host_s=0.0), compute("b", 2 * US, host_sync=False)], dgx)
    assert zero.step_time_s == plain.step_time_s == pytest.approx(5 * US)


def test_the_host_issues_across_streams_in_list_order(dgx):
    """b (its own stream, free) still waits for the host to issue a before it."""
    r = run([compute("a", 1 * US, stream="s1", host_s=10 * US), compute("b", 1 * US, stream="s2", host_s=1 * US)], dgx)
    assert starts(r)["b"] == pytest.approx(11)


def test_a_dependency_listed_later_is_refused_with_a_host_timeline():
    ops = [compute("reader", 1 * US, stream="s1", deps=["writer"], host_s=1 * US),
           compute("writer", 1 * US, stream="s2")]
    with pytest.raises(InputError, match=r"ops\[0\]\.deps: 'writer' comes later in the list"):
        spmd(ops)


@pytest.mark.parametrize("field, value", [("host_s", 1 * US), ("host_sync", True)])
def test_a_done_op_takes_no_host_time(field, value):
    ops = [{"name": "ar", "kind": "all-reduce", "bytes": 1024.0, "async": True},
           {"name": "ar.done", "kind": "done", "start": "ar", field: value}]
    with pytest.raises(InputError, match=rf"ops\[1\]\.{field}: a done op is no work the host issues"):
        spmd(ops)
