"""A replay keeps the cyclic garbage collector off its long-lived objects while it runs
and leaves the collector as it found it."""

from __future__ import annotations

import gc

from accelsim.system.replay import replay
from tests.system.conftest import compute, spmd

STEP = [compute("fwd", 3e-4),
        {"name": "ar", "kind": "all-reduce", "bytes": 8 << 20, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]]}]


def test_nothing_stays_frozen_after_a_replay(dgx):
    assert gc.get_freeze_count() == 0
    replay(spmd(STEP), dgx)
    assert gc.get_freeze_count() == 0


def test_the_thresholds_come_back_after_a_replay(dgx):
    threshold = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    try:
        replay(spmd(STEP), dgx)
        assert gc.get_threshold() == (900, 11, 12)
    finally:
        gc.set_threshold(*threshold)


def test_objects_the_caller_froze_stay_frozen(dgx):
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        replay(spmd(STEP), dgx)
        # still frozen, and nothing more (frozen objects that die leave the count)
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_results_do_not_depend_on_the_collector(dgx):
    plain = replay(spmd(STEP), dgx)
    gc.disable()
    try:
        without = replay(spmd(STEP), dgx)
    finally:
        gc.enable()
    assert plain.summary() | {"sim_wall_s": 0} == without.summary() | {"sim_wall_s": 0}


def test_collection_a_caller_turned_off_stays_off_during_a_replay(dgx, monkeypatch):
    threshold = gc.get_threshold()
    seen = []
    real = gc.set_threshold
    monkeypatch.setattr(gc, "set_threshold", lambda *a: (seen.append(a), real(*a)))
    real(0, 10, 10)
    try:
        replay(spmd(STEP), dgx)
        assert all(a[0] == 0 for a in seen) and gc.get_threshold() == (0, 10, 10)
    finally:
        real(*threshold)
