"""The GPU replay's shortcuts: each skips work whose result is known exactly, each can be
switched off, and each is tested against the plain path (``tests/engine/``).

- **Identical runs** (:func:`program_runs`): a kernel of many programs whose launch order
  holds long runs of identical programs (the same costs and L2 hits) is timed once per
  run, not once per program.
- **Wave fast-forward** (:class:`WaveSkipper`): an even kernel's identical whole waves,
  after the first one replayed, are added at once.
- **Replay memo** (:data:`ReplayMemo`): a search's configs that the engine cannot tell
  apart share one replay.

The fluid pool has shortcuts of its own (free-running, coalesced starts): see
:class:`~accelsim.engine.fluid.FluidResources`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields

import numpy as np

from accelsim.arch.model import Chip
from accelsim.engine.fluid import FluidResources
from accelsim.engine.program_times import ProgramTimes
from accelsim.engine.programs import ProgramCosts, kernel_index
from accelsim.trace.kernel import KernelTrace


@dataclass(frozen=True, kw_only=True)
class Shortcuts:
    """Which of the GPU replay's exact shortcuts to take (all, by default). Each gives the
    results of the replay without it; off, for checks and profiling."""

    fast_forward_waves: bool = True
    """Add identical whole waves at once instead of replaying each (never on a timeline,
    which draws every wave)."""
    runs_from: int | None = 4096
    """Time kernels of at least this many programs once per run of identical programs;
    None: time every program."""


PLAIN = Shortcuts(fast_forward_waves=False, runs_from=None)
"""No shortcut: every program timed, every wave replayed."""


# ---------------------------------------------------------------- identical runs


def change_points(columns) -> np.ndarray:
    """Positions (ascending, 0 excluded) where any of the equally long 1-D ``columns``
    differs from the position before."""
    differs = None
    for column in columns:
        changed = column[1:] != column[:-1]
        differs = changed if differs is None else differs | changed
    return np.flatnonzero(differs) + 1


def program_runs(costs: ProgramCosts, *more: np.ndarray,
                 runs_from: int | None = Shortcuts.runs_from) -> tuple[np.ndarray, np.ndarray | None]:
    """Runs of identical programs: launch positions where a program differs from the one
    before it in its costs or in any of the per-program arrays ``more`` (for a replay:
    its L2 read hits and absorbed writes), 0 first, and each program's run. ``(every
    position, None)`` when there are fewer programs than ``runs_from`` (or it is None) or
    the runs would be short."""
    n = costs.num_programs
    if runs_from is not None and n >= runs_from:
        starts = np.concatenate([[0], change_points([*(getattr(costs, f.name) for f in fields(ProgramCosts)), *more])])
        if len(starts) <= n // 4:
            return starts, np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    return np.arange(n), None


def kernel_runs(trace: KernelTrace, costs: ProgramCosts, *more: np.ndarray,
                runs_from: int | None = Shortcuts.runs_from) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`program_runs`, split where a kernel with resources of its own begins (its
    programs' instruction streams and residents differ from the kernel before)."""
    if trace.kernel.kernel_resources is not None:
        more = (*more, kernel_index(trace))
    return program_runs(costs, *more, runs_from=runs_from)


# ---------------------------------------------------------------- wave fast-forward


def identity_boundaries(times: ProgramTimes, demand_rows: np.ndarray, group_key: np.ndarray) -> np.ndarray:
    """Indices where a program differs from the one before it in anything a replay sees
    (its demand, cohort and times), ascending: runs of identical programs lie between."""
    columns = [*demand_rows.T, times.exposed, times.sm, times.requests, times.waited, group_key]
    if not times.serial:
        columns.append(np.maximum(times.chain, times.latency_bound))
    return change_points(columns)


class WaveSkipper:
    """Wave fast-forward: an even kernel runs one wave after another, each a whole wave of
    identical programs started on an idle pool and finished before the next starts. Every
    such wave takes the same whole picoseconds and serves the same demand, so once one has
    run, the identical whole waves after it are added at once: their time, demand and
    events are booked on the pool without replaying them."""

    def __init__(self, pool: FluidResources, boundaries) -> None:
        """``boundaries()``: the launch positions where a run of identical programs ends
        (a program that differs, a kernel's start), made when first needed."""
        self.pool = pool
        self._make_boundaries = boundaries
        self._boundaries: np.ndarray | None = None
        self.first = -1
        """The first program of the last wave started on an idle pool (-1: none)."""
        self._start_ps = 0
        self._used = np.zeros(0)
        self._events = 0

    def clear(self) -> None:
        self.first = -1

    def mark(self, first: int, now_ps: int) -> None:
        """A whole wave of programs from ``first`` starts now on an idle pool."""
        self.first, self._start_ps = first, now_ps
        self._used, self._events = self.pool.used_array(), self.pool.events

    def ended(self, next_program: int, slots: int) -> bool:
        """Whether the marked wave has just ended alone: dispatch is one wave past it."""
        return self.first >= 0 and next_program == self.first + slots

    def skip(self, next_program: int, limit: int, slots: int, now_ps: int) -> tuple[int, int]:
        """(waves, picoseconds) of the identical whole waves after the one just ended, up to
        launch position ``limit``, with their demand and events booked on the pool (0, 0
        if none)."""
        if self._boundaries is None:
            self._boundaries = self._make_boundaries()
        bounds = self._boundaries
        after = int(np.searchsorted(bounds, self.first, side="right"))  # the run holding the wave ends there
        run_end = int(bounds[after]) if after < len(bounds) else limit
        waves = (min(run_end, limit) - next_program) // slots
        if waves < 1:
            return 0, 0
        period = now_ps - self._start_ps
        self.pool.book(waves * (self.pool.used_array() - self._used), waves * (self.pool.events - self._events))
        self.clear()
        return waves, waves * period


# ---------------------------------------------------------------- replay memo


@dataclass(frozen=True)
class Replayed:
    """What a GPU replay leaves for the result (the pool's ``used`` and ``events``)."""

    used: dict[str, float]
    events: int
    body_ps: int
    kernel_ends_ps: tuple[int, ...] = ()


ReplayMemo = dict[bytes, Replayed]
"""Replays already made, by everything they depend on (:func:`replay_key`): configs of
one search often differ only where the engine cannot see it (a pipeline depth that does
not bind, say), and a deterministic replay of equal inputs gives equal outputs. Passing
none (``simulate_kernel(replays=None)``) replays every call."""


def replay_key(chip: Chip, per_cores: list[int], resources: list[str], caps: dict[str, float],
               times: ProgramTimes, demand_rows: np.ndarray, group_key: np.ndarray,
               kernel_starts: list[int] | None = None, run_starts: np.ndarray | None = None,
               programs: int = 0) -> bytes:
    """Everything a replay depends on; ``run_starts``: where each run of identical programs
    begins, when the other arrays are per run rather than per program (whose count,
    ``programs``, the arrays then do not give)."""
    digest = hashlib.blake2b(digest_size=32)
    digest.update(repr((chip.num_cores, per_cores, resources, [caps[r] for r in resources],
                        times.serial, demand_rows.shape, kernel_starts, run_starts is None, programs)).encode())
    if run_starts is not None:
        digest.update(np.ascontiguousarray(run_starts).tobytes())
    # A replay sees a program's times only through ProgramTimes.seconds, which depends on
    # the chain and latency terms only through their maximum (a pipeline depth that does
    # not bind leaves it alone).
    parts = [times.exposed, times.sm, times.startup, times.requests, times.waited]
    if not times.serial:
        parts.append(np.maximum(times.chain, times.latency_bound))
    for array in (*parts, demand_rows, group_key):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()
