"""Pipeline schedules run every microbatch through every chunk once, forward before
backward, and every send has its receive on the other stage in the same order."""

from __future__ import annotations

import pytest

from accelsim.model.pipeline import receives, schedule, sends


@pytest.mark.parametrize("pp, v, m", [(4, 1, 8), (4, 1, 2), (2, 2, 4), (4, 3, 8)])
def test_every_task_once_forward_first(pp, v, m):
    for stage in range(pp):
        tasks = schedule(pp, v, m, stage, forward_only=False)
        assert len(tasks) == 2 * m * v and len(set(tasks)) == 2 * m * v
        for t in tasks:
            if t.kind == "B":
                assert tasks.index(t) > tasks.index(type(t)("F", t.microbatch, t.chunk))


def test_one_f_one_b_warmup():
    """Stage s of 4 runs 3 - s forwards before its first backward."""
    for stage in range(4):
        kinds = [t.kind for t in schedule(4, 1, 8, stage, forward_only=False)]
        assert kinds.index("B") == 4 - stage


@pytest.mark.parametrize("pp, v, m", [(4, 1, 8), (2, 2, 4), (4, 2, 8)])
def test_sends_match_receives_in_order(pp, v, m):
    for kind in ("F", "B"):
        for a in range(pp):
            for b in range(pp):
                sent = [(t.microbatch, t.chunk) for t in schedule(pp, v, m, a, False)
                        if t.kind == kind and sends(t, a, pp, v) == b]
                got = [(t.microbatch, t.chunk) for t in schedule(pp, v, m, b, False)
                       if t.kind == kind and receives(t, b, pp, v) == a]
                assert [mb for mb, _ in sent] == [mb for mb, _ in got]
