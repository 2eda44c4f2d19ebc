"""Capture by equivalence class: run a few programs of each class, replicate the rest.

A Triton program's steps follow from the integers its prologue computes from its grid
position (``pid_m``, ``pid_n``, ``batch``, ``head``, loop bounds, ...). One run of the
prologue with every program's ids at once (:class:`FeatureProbe`: ``tl.program_id``
returns one value per program, the scalar arithmetic is numpy over programs) gives
those integers, the *features*, for the whole grid in the time of one program.

Programs are then put in classes by where each feature sits in its range: at its
least value, at its greatest, or in between (interior tiles, the last ragged row or
column, the first query block of a causal kernel with no full key block, ...). Of each
class a few programs, spread over it in launch order, run in the interpreter
(:func:`representatives`), and one more, held out (:func:`held_out`). The others are
predicted: the same steps, and every block index and repeat count the same integer
function of one feature as in all the representatives, affine or an affine function of
a floor division (``A``'s row block is ``pid_m``, a causal loop runs ``2 * q_block``
times, a decode's query-head block is ``kv_head // 4``; :func:`integer_fit`). A class whose
representatives disagree in their steps, whose integers no single feature explains (or
several features explain differently elsewhere in the class), or whose held-out program
differs from its prediction, runs every program instead. Loops are then checked in full
as before (``docs/capture-triton.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

REPRESENTATIVES = 5
"""Programs of a class that run (spread over it in launch order: the first and last
among them); classes no larger run whole."""

MAX_FEATURES = 256
"""Feature columns kept (the prologue's first integers); a prologue longer than this
rarely adds a class."""


class ProbeDone(Exception):
    """The probe has what it can get: a loop, or an operation it cannot run for every
    program at once, was reached."""


@dataclass
class FeatureProbe:
    """The integers the prologue computes, one value per program, recorded while it runs
    once for all programs (``values``: one array per operation, in order)."""

    programs: int
    grid_coords: list[np.ndarray]
    values: list[np.ndarray]

    @classmethod
    def for_grid(cls, grid: Sequence[int]) -> FeatureProbe:
        pid = np.arange(int(np.prod(grid)), dtype=np.int64)
        coords, stride = [], 1
        for size in grid:
            coords.append((pid // stride) % size)
            stride *= size
        return cls(programs=len(pid), grid_coords=coords, values=[])

    def add(self, values: np.ndarray) -> None:
        if len(self.values) < MAX_FEATURES and values.dtype.kind in "iub":
            self.values.append(values.astype(np.int64))

    def features(self) -> np.ndarray:
        """Features x programs: the grid coordinates first, then the prologue's integers;
        columns that do not vary are left out."""
        rows = [row for row in [*self.grid_coords, *self.values] if row.min() != row.max()]
        return np.array(rows, dtype=np.int64).reshape(len(rows), self.programs)


def program_classes(features: np.ndarray) -> np.ndarray:
    """Each program's class: programs share a class when every feature is, for both, at
    its least value, at its greatest, or in between."""
    if len(features) == 0:
        return np.zeros(features.shape[1], dtype=np.int64)
    low, high = features.min(axis=1, keepdims=True), features.max(axis=1, keepdims=True)
    states = np.where(features == low, 0, np.where(features == high, 2, 1))
    _, classes = np.unique(states.T, axis=0, return_inverse=True)
    return classes.reshape(-1)


def representatives(members: np.ndarray) -> np.ndarray:
    """The programs of a class (ascending) that run: all of a small class, else
    :data:`REPRESENTATIVES` spread evenly from its first to its last."""
    if len(members) <= REPRESENTATIVES:
        return members
    return members[np.unique(np.linspace(0, len(members) - 1, REPRESENTATIVES).round().astype(np.int64))]


def held_out(members: np.ndarray) -> np.ndarray:
    """The program of a class (ascending) that runs to check its prediction: the middle one
    of those :func:`representatives` leaves out; none for a class that runs whole."""
    others = np.setdiff1d(members, representatives(members))
    middle = len(others) // 2
    return others[middle:middle + 1]


@dataclass(frozen=True)
class Rule:
    """An integer of a program's steps from one of its features:
    ``a * (features[row] // divisor) + b``."""

    row: int
    a: int
    b: int
    divisor: int = 1

    def at(self, features: np.ndarray) -> np.ndarray:
        return self.a * (features[self.row] // self.divisor) + self.b


MAX_DIVISOR = 64
"""The largest ``divisor`` a :class:`Rule` is tried with (a block of several heads or
rows: ``kv_head * group // BLOCK_M``)."""


def lines_through(values: np.ndarray, features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per feature row: whether ``values == a * row + b`` for integers ``a != 0`` and ``b``,
    and those ``a`` and ``b``."""
    first = features[:, :1]
    varies = features != first
    j = varies.argmax(axis=1)
    rise = values[j] - values[0]
    run = np.take_along_axis(features, j[:, None], axis=1)[:, 0] - first[:, 0]
    safe_run = np.where(varies.any(axis=1), run, 1)
    a = rise // safe_run
    b = values[0] - a * first[:, 0]
    fits = varies.any(axis=1) & (rise % safe_run == 0) & (a != 0) & (a[:, None] * features + b[:, None] == values).all(axis=1)
    return fits, a, b


def rules_that_fit(values: np.ndarray, features: np.ndarray) -> list[Rule]:
    """Every :class:`Rule` that gives ``values`` at ``features`` (features x programs): the
    affine ones (divisor 1), or where there is none, the floor ones."""
    for divisors in ((1,), range(2, MAX_DIVISOR + 1)):
        rules = []
        for divisor in divisors:
            fits, a, b = lines_through(values, features // divisor)
            rules += [Rule(int(row), int(a[row]), int(b[row]), divisor) for row in np.flatnonzero(fits)]
        if rules:
            return rules
    return []


def rule_for(values: np.ndarray, features: np.ndarray, over: np.ndarray) -> Rule | None:
    """The first of :func:`rules_that_fit` at the representatives (``features``), provided
    every rule that fits predicts the same at ``over`` (features x programs: the whole
    class); None if none fits or two disagree there (the representatives cannot tell
    which one it is)."""
    rules = rules_that_fit(values, features)
    if not rules:
        return None
    expected = rules[0].at(over)
    return rules[0] if all(np.array_equal(rule.at(over), expected) for rule in rules[1:]) else None


def integer_fit(samples: np.ndarray, features: np.ndarray, over: np.ndarray) -> list[Rule | int] | None:
    """Per column of ``samples`` (representatives x integers): the constant it holds, or
    its :func:`rule_for` (``features`` at the representatives, ``over`` at every program
    of their class); None if a column fits neither, or if a column is constant while a
    feature that is constant at the representatives varies in the class (the column could
    follow it)."""
    hidden = bool(((features.min(axis=1) == features.max(axis=1)) & (over.min(axis=1) != over.max(axis=1))).any())
    out: list[Rule | int] = []
    for column in samples.T:
        if column.min() == column.max():
            if hidden:
                return None
            out.append(int(column[0]))
            continue
        rule = rule_for(column, features, over)
        if rule is None:
            return None
        out.append(rule)
    return out


def evaluate_fit(fit: list[Rule | int], features: np.ndarray) -> np.ndarray:
    """Programs x integers predicted by :func:`integer_fit` at ``features`` (one column
    per program)."""
    columns = [np.full(features.shape[1], term, dtype=np.int64) if isinstance(term, int) else term.at(features)
               for term in fit]
    return np.array(columns, dtype=np.int64).reshape(len(fit), features.shape[1]).T
