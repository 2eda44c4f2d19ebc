"""Where a fluid pool keeps its flows' demands, one row (a *slot*) per flow: a dense
slots x resources matrix whose per-event sums are BLAS products, or each slot's
(resource, amount) pairs for pools of many resources whose flows each name a few (a
16,384-GPU step's link pool: 16,384 flows on 33,024 links). The pool
(:class:`~accelsim.engine.fluid.FluidResources`) chooses by size."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from accelsim.engine.fair_share import max_min_rates, max_min_rates_sparse, pair_sums


class DenseDemands:
    """Every slot's demand as a row of one slots x resources matrix: per-event sums are
    BLAS products (whose float rounding every committed result was made with)."""

    def __init__(self, resources: int) -> None:
        self.matrix = np.zeros((0, resources))

    def grow(self, slots: int) -> None:
        self.matrix = np.vstack([self.matrix, np.zeros((slots, self.matrix.shape[1]))])

    def set(self, slot: int, columns: list[int] | slice, amounts: list[float]) -> None:
        if not isinstance(columns, slice):
            self.matrix[slot] = 0.0
        self.matrix[slot, columns] = amounts

    def set_many(self, slots: list[int], demands: list[tuple[list[int] | slice, list[float]]]) -> None:
        """:meth:`set` for each slot and its (columns, amounts)."""
        for slot, (columns, amounts) in zip(slots, demands):
            self.set(slot, columns, amounts)

    def add_scaled(self, out: np.ndarray, slot: int, scale: float) -> None:
        """``out += demand[slot] * scale``, in place."""
        out += self.matrix[slot] * scale

    def add_scaled_many(self, out: np.ndarray, slots: np.ndarray, scales: np.ndarray) -> None:
        """:meth:`add_scaled` for each slot in turn."""
        for slot, scale in zip(slots.tolist(), scales):
            self.add_scaled(out, slot, scale)

    def take(self, slots: np.ndarray) -> np.ndarray:
        return self.matrix.take(slots, axis=0)

    def served(self, weights: np.ndarray, slots: np.ndarray | None = None) -> np.ndarray:
        """``weights @ demand`` (of these slots, or of every slot): per resource."""
        return weights @ (self.matrix if slots is None else self.matrix[slots])

    def sparse(self) -> SparseDemands:
        """The same demands as (resource, amount) pairs."""
        out = SparseDemands(self.matrix.shape[1])
        out.grow(self.matrix.shape[0])
        for slot, row in enumerate(self.matrix):
            columns = np.flatnonzero(row)
            out.set(slot, columns, row[columns])
        return out


@dataclass
class SparseBlock:
    """Some slots' demands as (resource, amount) pairs, zero-padded to one width."""

    columns: np.ndarray
    amounts: np.ndarray
    resources: int

    def served(self, weights: np.ndarray) -> np.ndarray:
        """``weights @ demand`` per resource, added in slot order."""
        return pair_sums(self.columns, self.amounts, weights, self.resources)


class SparseDemands:
    """Every slot's demand as its (resource, amount) pairs, for pools of many resources
    whose flows each name a few (links); sums are added in slot order, so they can
    differ from :class:`DenseDemands`' BLAS products in the last bits."""

    def __init__(self, resources: int) -> None:
        self.resources = resources
        self.columns = np.zeros((0, 1), dtype=np.int64)
        self.amounts = np.zeros((0, 1))
        self.count = np.zeros(0, dtype=np.int64)

    def grow(self, slots: int) -> None:
        width = self.columns.shape[1]
        self.columns = np.vstack([self.columns, np.zeros((slots, width), dtype=np.int64)])
        self.amounts = np.vstack([self.amounts, np.zeros((slots, width))])
        self.count = np.concatenate([self.count, np.zeros(slots, dtype=np.int64)])

    def set(self, slot: int, columns: list[int] | slice | np.ndarray, amounts) -> None:
        if isinstance(columns, slice):
            columns = range(self.resources)[columns]
        n = len(columns)
        if n > self.columns.shape[1]:
            more = n - self.columns.shape[1]
            self.columns = np.hstack([self.columns, np.zeros((len(self.count), more), dtype=np.int64)])
            self.amounts = np.hstack([self.amounts, np.zeros((len(self.count), more))])
        self.columns[slot] = 0
        self.amounts[slot] = 0.0
        self.columns[slot, :n] = columns
        self.amounts[slot, :n] = amounts
        self.count[slot] = n

    def set_many(self, slots: list[int], demands: list[tuple[list[int] | slice, list[float]]]) -> None:
        """:meth:`set` for each slot and its (columns, amounts), in a few array operations
        (a phase of a collective starts thousands of flows at once)."""
        every = range(self.resources)
        columns = [every[c] if isinstance(c, slice) else c for c, _ in demands]
        counts = np.fromiter(map(len, columns), dtype=np.int64, count=len(columns))
        widest = int(counts.max(initial=0))
        if widest > self.columns.shape[1]:
            more = widest - self.columns.shape[1]
            self.columns = np.hstack([self.columns, np.zeros((len(self.count), more), dtype=np.int64)])
            self.amounts = np.hstack([self.amounts, np.zeros((len(self.count), more))])
        at = np.array(slots, dtype=np.int64)
        self.columns[at] = 0
        self.amounts[at] = 0.0
        self.count[at] = counts
        row = np.repeat(at, counts)
        place = np.arange(len(row)) - np.repeat(np.cumsum(counts) - counts, counts)
        self.columns[row, place] = list(chain.from_iterable(columns))
        self.amounts[row, place] = list(chain.from_iterable(amounts for _, amounts in demands))

    def add_scaled(self, out: np.ndarray, slot: int, scale: float) -> None:
        n = self.count[slot]
        out[self.columns[slot, :n]] += self.amounts[slot, :n] * scale

    def add_scaled_many(self, out: np.ndarray, slots: np.ndarray, scales: np.ndarray) -> None:
        """:meth:`add_scaled` for each slot in turn: added one pair at a time in slot order
        (``np.add.at``), as the loop would (a padding pair adds 0 to resource 0)."""
        np.add.at(out, self.columns[slots].ravel(), (self.amounts[slots] * scales[:, None]).ravel())

    def take(self, slots: np.ndarray) -> SparseBlock:
        return SparseBlock(self.columns[slots], self.amounts[slots], self.resources)

    def served(self, weights: np.ndarray, slots: np.ndarray | None = None) -> np.ndarray:
        if slots is None:
            return SparseBlock(self.columns, self.amounts, self.resources).served(weights)
        return self.take(slots).served(weights)


def fair_rates(demand: np.ndarray | SparseBlock, max_rate: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    if isinstance(demand, SparseBlock):
        return max_min_rates_sparse(demand.columns, demand.amounts, max_rate, capacity)
    return max_min_rates(demand, max_rate, capacity)


def served(weights: np.ndarray, demand: np.ndarray | SparseBlock) -> np.ndarray:
    return demand.served(weights) if isinstance(demand, SparseBlock) else weights @ demand
