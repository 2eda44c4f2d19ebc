"""The work a kernel trace describes (programs x the entries of their steps) is counted
from its templates and refused past the limit before any of it is done: a 9 MB trace of
one 10,000-step template took 162 s and 14.5 GB."""

from __future__ import annotations

import time

import pytest

from accelsim.errors import InputError
from accelsim.trace.kernel import MAX_STEP_ENTRIES, parse_trace, step_entries


def _trace(grid: list[int], steps_per_template: list[int], program_template=None) -> dict:
    step = {"transfers": [{"tensor": "X", "block": [], "bytes": 256}]}  # 2 entries: the step and its transfer
    data = {
        "schema_version": 1,
        "kernel": {"name": "k", "grid": grid},
        "tensors": {"X": {"shape": [128], "dtype": "bf16"}},
        "templates": [{"name": f"t{i}", "steps": [step] * n} for i, n in enumerate(steps_per_template)],
    }
    if program_template is not None:
        data["program_template"] = program_template
    return data


def test_entries_count_every_program_of_each_template():
    trace = parse_trace(_trace([4], [3, 1], program_template=[0, 1, 1, 0]), "t.json")
    assert step_entries(trace) == 2 * (3 * 2) + 2 * (1 * 2)
    assert step_entries(parse_trace(_trace([5, 2], [3]), "t.json")) == 10 * 3 * 2


def test_past_the_limit_is_refused_before_the_work():
    data = _trace([2**23], [5])  # 8.4 million programs x 10 entries
    started = time.perf_counter()
    with pytest.raises(InputError) as exc:
        parse_trace(data, "t.json")
    assert time.perf_counter() - started < 5
    assert exc.value.one_line() == (
        f"t.json: the trace describes {2**23 * 10:,} step entries (8,388,608 programs x the steps, transfers and "
        f"computes of their templates); accelsim simulates at most {MAX_STEP_ENTRIES:,} (2^26) in one kernel: use "
        "a repeat for a loop, or fewer programs")


def test_at_the_limit_is_read():
    assert step_entries(parse_trace(_trace([2**24], [2]), "t.json")) == MAX_STEP_ENTRIES
