"""Shared bandwidth as a fluid: flows with demands on shared resources, served at
weighted max-min fair rates, on a SimPy clock in integer picoseconds.

This is the one mechanism for contention in accelsim: HBM and L2 bandwidth and SM
issue slots between the programs of a kernel, and (later) links between concurrent
transfers of collectives.

A :class:`Flow` is an amount of *work* (1.0 = all of it) with a demand per unit of
work on each resource it uses (bytes, or core-seconds) and a ``max_rate``: how fast
it could finish if it had every resource to itself (work per second). Rates follow
dominant-resource max-min fairness (progressive filling): flows on a saturated
resource get equal shares of it unless limited elsewhere, and what one flow cannot
use goes to the others. Rates are recomputed only when a flow starts or ends, so
the cost is a few events per flow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import simpy

from accelsim.units import PS_PER_S

_EPS = 1e-12


@dataclass(eq=False)
class Flow:
    """Work that consumes shared resources as it progresses.

    ``demand[r]`` is how much of resource ``r`` the whole flow uses (bytes, or
    core-seconds); ``max_rate`` is in flows per second (1 / its time alone).
    """

    name: str
    demand: Mapping[str, float]
    max_rate: float
    on_done: Callable[["Flow"], None] | None = None
    count: int = 1
    """How many identical programs (or transfers) this flow stands for."""
    remaining: float = 1.0
    rate: float = 0.0
    vector: np.ndarray | None = None
    tag: object = None
    """Free for the owner (e.g. which core group a cohort runs on)."""
    started_ps: int = 0
    finished_ps: int | None = None


class FluidResources:
    """A set of shared resources (capacity per second each) and the flows using them."""

    def __init__(self, env: simpy.Environment, capacities: Mapping[str, float]) -> None:
        for name, cap in capacities.items():
            if not cap > 0:
                raise ValueError(f"resource {name!r} needs a positive capacity, got {cap!r}")
        self.env = env
        self.capacities = dict(capacities)
        self._names = list(capacities)
        self._capacity = np.array([capacities[n] for n in self._names], dtype=float)
        self._used = np.zeros(len(self._names))
        self.flows: list[Flow] = []
        self.events = 0
        self.observer: Callable[[int, "FluidResources"], None] | None = None
        """Called after every reallocation with (now_ps, self): for timelines."""
        self._generation = 0
        self._last_ps = 0
        self._in_callbacks = False

    # ------------------------------------------------------------ public

    def start(self, flow: Flow) -> None:
        """Add a flow now; its ``on_done`` is called when its work is done."""
        self.start_many([flow])

    def start_many(self, flows: list[Flow]) -> None:
        """Add several flows at once (one reallocation)."""
        for flow in flows:
            unknown = set(flow.demand) - set(self.capacities)
            if unknown:
                raise ValueError(f"flow {flow.name!r} uses unknown resources {sorted(unknown)}")
            if not flow.max_rate > 0:
                raise ValueError(f"flow {flow.name!r} needs a positive max_rate")
        self._advance()
        for flow in flows:
            flow.started_ps = self.env.now
            flow.vector = np.array([flow.demand.get(r, 0.0) for r in self._names])
            self.flows.append(flow)
        if not self._in_callbacks:
            self._reschedule()

    def rates(self) -> dict[str, float]:
        """Current use of each resource per second."""
        total = np.zeros(len(self._names))
        for flow in self.flows:
            total += flow.rate * flow.vector
        return dict(zip(self._names, total.tolist()))

    # ------------------------------------------------------------ internals

    def _advance(self) -> None:
        """Move every flow's progress to now at its current rate."""
        dt = (self.env.now - self._last_ps) / PS_PER_S
        self._last_ps = self.env.now
        if dt <= 0 or not self.flows:
            return
        for flow in self.flows:
            done = min(flow.rate * dt, flow.remaining)
            flow.remaining -= done
            self._used += flow.vector * done

    @property
    def used(self) -> dict[str, float]:
        """Total demand served per resource so far."""
        return dict(zip(self._names, self._used.tolist()))

    def _allocate(self) -> None:
        """Dominant-resource max-min fairness by progressive filling.

        Every unfrozen flow runs at ``level * weight``, where ``weight`` makes its
        largest share of any resource equal to ``level``. The level rises until a
        resource saturates (the flows using it freeze there) or flows reach their own
        ``max_rate`` (they freeze at it); repeat with what is left.
        """
        if not self.flows:
            return
        demand = np.stack([f.vector for f in self.flows])
        max_rate = np.array([f.max_rate for f in self.flows])
        dominant = (demand / self._capacity).max(axis=1)
        rate = np.where(dominant > 0, 0.0, max_rate)  # a flow using nothing shared runs free
        unfrozen = dominant > 0
        weight = np.divide(1.0, dominant, out=np.zeros_like(dominant), where=unfrozen)
        free = self._capacity - rate @ demand
        cap_level = np.divide(max_rate, weight, out=np.full_like(max_rate, np.inf), where=unfrozen)
        while unfrozen.any():
            load = (weight * unfrozen) @ demand
            with np.errstate(divide="ignore", invalid="ignore"):
                levels = np.where(load > _EPS, free / load, np.inf)
            level = levels.min()
            capped = unfrozen & (cap_level <= level)
            if capped.any():
                freeze = capped
                rate[freeze] = max_rate[freeze]
            else:
                bottleneck = int(levels.argmin())
                freeze = unfrozen & (demand[:, bottleneck] > 0)
                rate[freeze] = level * weight[freeze]
            free = np.maximum(free - rate[freeze] @ demand[freeze], 0.0)
            unfrozen &= ~freeze
        for flow, r in zip(self.flows, rate.tolist()):
            flow.rate = r

    def _reschedule(self) -> None:
        self._allocate()
        self._generation += 1
        if self.observer is not None:
            self.observer(self.env.now, self)
        if not self.flows:
            return
        soonest = min(self._time_left_ps(f) for f in self.flows)
        generation = self._generation
        event = self.env.timeout(soonest)
        event.callbacks.append(lambda _e: self._on_timer(generation))
        self.events += 1

    def _time_left_ps(self, flow: Flow) -> int:
        if flow.remaining <= _EPS:
            return 0
        return round(flow.remaining / flow.rate * PS_PER_S) if flow.rate > 0 else 2**62

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return
        self._advance()
        done = [f for f in self.flows if self._time_left_ps(f) == 0]
        self.flows = [f for f in self.flows if self._time_left_ps(f) != 0]
        for flow in done:
            self._used += flow.vector * flow.remaining
            flow.remaining = 0.0
            flow.finished_ps = self.env.now
        self._in_callbacks = True  # flows started by callbacks join one reallocation
        try:
            for flow in done:
                if flow.on_done:
                    flow.on_done(flow)
        finally:
            self._in_callbacks = False
        self._reschedule()
