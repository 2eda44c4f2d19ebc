"""How many communication ops of a program can move data at once, read from its schedule
(``comm_in_flight``, the link-sharing check's bound): an asynchronous op's window runs from
its place on its stream to the first later op there that waits for it, and only windows
that overlap count together."""

from __future__ import annotations

from accelsim.system.program import comm_in_flight
from tests.system.conftest import compute, spmd


def _permute(name: str, **extra) -> dict:
    return {"name": name, "kind": "collective-permute", "bytes": 4096, "pairs": [[0, 1], [1, 0]], "async": True,
            **extra}


def _done(name: str, start: str) -> dict:
    return {"name": name, "kind": "done", "start": start}


def test_start_done_pairs_in_sequence_count_one():
    """XLA's decomposed reduce-scatter: each permute's done before the next starts."""
    ops = []
    for i in range(2000):
        ops += [_permute(f"p{i}"), compute(f"c{i}", 1e-6), _done(f"d{i}", f"p{i}")]
    assert comm_in_flight(spmd(ops, "0-1", 2).programs[0]) == 1


def test_overlapping_windows_count_together():
    ops = [_permute("p0"), _permute("p1"), _done("d0", "p0"), _permute("p2"), _done("d1", "p1"), _done("d2", "p2")]
    assert comm_in_flight(spmd(ops, "0-1", 2).programs[0]) == 2


def test_a_user_of_the_result_on_the_stream_ends_the_window():
    ops = [_permute("p0"), compute("use", 1e-6, deps=["p0"]), _permute("p1"), compute("use1", 1e-6, deps=["p1"])]
    assert comm_in_flight(spmd(ops, "0-1", 2).programs[0]) == 1


def test_an_op_nothing_on_its_stream_waits_for_stays_in_flight_to_the_end():
    """Its user on another stream does not bound it: that stream may run ahead."""
    ops = [_permute("p0"), compute("use", 1e-6, deps=["p0"], stream="other"), _permute("p1"),
           _done("d1", "p1")]
    assert comm_in_flight(spmd(ops, "0-1", 2).programs[0]) == 2


def test_streams_add_up_and_synchronous_ops_hold_their_stream():
    ops = [{"name": f"ar{i}", "kind": "all-reduce", "bytes": 4096, "stream": f"s{i % 3}"} for i in range(30)]
    ops += [_permute("p0", stream="s0"), {"name": "ar", "kind": "all-reduce", "bytes": 4096, "stream": "s0"},
            _done("d0", "p0")]
    assert comm_in_flight(spmd(ops, "0-1", 2).programs[0]) == 3 + 1
