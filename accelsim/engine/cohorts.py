"""Where GPU programs run and which run together: the block scheduler's placement on SMs
(:class:`CoreSlots`) and the cohort keys of programs that share one flow."""

from __future__ import annotations

import numpy as np

from accelsim.engine.programs import ProgramCosts

COHORT_BUCKETS_PER_OCTAVE = 8
"""Programs started together join one cohort if they share a template and their
iteration counts round to the same 1/8-octave bucket (within ~9%). Bytes and flops
stay exact (a cohort's demand is its members' sum); only finishing times within a
cohort are averaged. This keeps causal attention at a few events per wave."""


def cohort_keys(costs: ProgramCosts) -> np.ndarray:
    """Each program's cohort key: its template and its iteration count's bucket."""
    bucket = np.round(np.log2(np.maximum(costs.iterations, 1.0)) * COHORT_BUCKETS_PER_OCTAVE).astype(np.int64)
    return costs.template * (int(bucket.max()) + 1) + bucket


SMALL_BATCH = 16
"""Batches up to this many programs are placed one by one (kernels whose programs finish
one at a time, such as causal attention, dispatch one or two at a time)."""


def groups(keys: np.ndarray) -> list[np.ndarray | slice]:
    """Indexes of equal keys, sorted by key: index arrays, or the slice of every key where
    all are equal (the common case: a view costs less than gathering)."""
    if len(keys) <= SMALL_BATCH:  # a few keys (uneven kernels' batches): Python's set is cheaper
        if len(set(keys.tolist())) == 1:
            return [slice(None)]
    elif keys.min() == keys.max():  # one group, the common case of even kernels
        return [slice(None)]
    order = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(np.diff(keys[order])) + 1
    return np.split(order, bounds)


class CoreSlots:
    """Which SM each program runs on: the block scheduler puts a new program on the SM
    with the fewest residents (lowest index first). A program's speed depends on how
    many programs share its SM when it starts."""

    def __init__(self, cores: int) -> None:
        self.resident = np.zeros(cores, dtype=np.int64)

    def place(self, count: int) -> np.ndarray:
        """The cores of ``count`` programs placed one after another. Placing one at a time
        on the least-loaded core takes the (load, core) pairs above each core's residents in
        ascending order, so the whole batch is the ``count`` smallest such pairs."""
        resident = self.resident
        if count <= SMALL_BATCH:  # one at a time is cheaper than the batch's sort
            placed = np.empty(count, dtype=np.int64)
            for i in range(count):
                placed[i] = core = int(resident.argmin())
                resident[core] += 1
            return placed
        top, most = int(resident.min()), int(resident.max())
        if top == most:  # every core equally loaded (an even kernel's waves): round robin
            resident += count // len(resident)
            resident[:count % len(resident)] += 1
            return np.arange(count) % len(resident)
        high = most + -(-count // len(resident))
        while top < high:  # the lowest level whose pairs number at least count
            mid = (top + high) // 2
            if int(np.maximum(mid - resident + 1, 0).sum()) >= count:
                high = mid
            else:
                top = mid + 1
        levels_per_core = np.maximum(top - resident + 1, 0)
        core = np.repeat(np.arange(len(resident)), levels_per_core)
        starts = np.cumsum(levels_per_core) - levels_per_core
        level = resident[core] + np.arange(len(core)) - np.repeat(starts, levels_per_core)
        placed = core[np.lexsort((core, level))[:count]]
        resident += np.bincount(placed, minlength=len(resident))
        return placed

    def release(self, cores: np.ndarray) -> None:
        if len(cores) <= SMALL_BATCH:  # a few programs, the common case: no unbuffered ufunc needed
            resident = self.resident
            for core in cores.tolist():
                resident[core] -= 1
        else:
            np.subtract.at(self.resident, cores, 1)
