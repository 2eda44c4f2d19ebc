"""The block scheduler's placement: each new program goes to the SM with the fewest
residents, lowest index first; placing a batch at once gives the same SMs, in the same
order, as placing its programs one at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.engine.chip import CoreSlots


def one_at_a_time(resident: np.ndarray, count: int) -> list[int]:
    resident = resident.copy()
    placed = []
    for _ in range(count):
        core = int(np.argmin(resident))  # the first of the least loaded
        placed.append(core)
        resident[core] += 1
    return placed


@settings(max_examples=200, deadline=None)
@given(
    cores=st.integers(1, 12),
    batches=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
)
def test_batches_place_like_single_programs(cores, batches, seed):
    slots = CoreSlots(cores)
    rng = np.random.default_rng(seed)
    for count, released in batches:
        running = np.repeat(np.arange(cores), slots.resident)
        if released and len(running):
            slots.release(rng.choice(running, size=min(released, len(running)), replace=False))
        before = slots.resident.copy()
        placed = slots.place(count)
        assert placed.tolist() == one_at_a_time(before, count)
        assert (slots.resident == before + np.bincount(placed, minlength=cores)).all()


def test_a_wave_fills_every_core_before_doubling_up():
    slots = CoreSlots(4)
    assert slots.place(6).tolist() == [0, 1, 2, 3, 0, 1]
    slots.release(np.array([2]))
    assert slots.place(3).tolist() == [2, 2, 3]
