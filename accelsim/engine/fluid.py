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
    remaining: float = 1.0
    rate: float = 0.0
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
        self.flows: list[Flow] = []
        self.events = 0
        self._generation = 0
        self._last_ps = 0
        self.used: dict[str, float] = {name: 0.0 for name in capacities}
        """Total demand served per resource so far (for utilisation)."""

    # ------------------------------------------------------------ public

    def start(self, flow: Flow) -> None:
        """Add a flow now; its ``on_done`` is called when its work is done."""
        unknown = set(flow.demand) - set(self.capacities)
        if unknown:
            raise ValueError(f"flow {flow.name!r} uses unknown resources {sorted(unknown)}")
        if not flow.max_rate > 0:
            raise ValueError(f"flow {flow.name!r} needs a positive max_rate")
        self._advance()
        flow.started_ps = self.env.now
        self.flows.append(flow)
        self._reschedule()

    # ------------------------------------------------------------ internals

    def _advance(self) -> None:
        """Move every flow's progress to now at its current rate."""
        dt = (self.env.now - self._last_ps) / PS_PER_S
        self._last_ps = self.env.now
        if dt <= 0:
            return
        for flow in self.flows:
            done = min(flow.rate * dt, flow.remaining)
            flow.remaining -= done
            for res, amount in flow.demand.items():
                self.used[res] += amount * done

    def _allocate(self) -> None:
        """Dominant-resource max-min fairness by progressive filling.

        Every unfrozen flow runs at ``level * weight`` where ``weight`` makes its
        largest share of any resource equal to ``level``; the level rises until a
        resource saturates (its flows freeze) or a flow reaches its ``max_rate``.
        """
        free = dict(self.capacities)
        weight: dict[int, float] = {}
        unfrozen = []
        for flow in self.flows:
            dominant = max((flow.demand.get(r, 0.0) / c for r, c in free.items()), default=0.0)
            if dominant > 0:
                weight[id(flow)] = 1.0 / dominant
                unfrozen.append(flow)
            else:
                flow.rate = flow.max_rate  # uses nothing shared: only its own limit applies
        while unfrozen:
            level, bottleneck = math.inf, None
            for res, cap in free.items():
                load = sum(weight[id(f)] * f.demand.get(res, 0.0) for f in unfrozen)
                if load > _EPS and cap / load < level:
                    level, bottleneck = cap / load, res
            capped = min(unfrozen, key=lambda f: f.max_rate / weight[id(f)])
            if capped.max_rate / weight[id(capped)] <= level:
                frozen = [capped]
                capped.rate = capped.max_rate
            else:
                frozen = [f for f in unfrozen if f.demand.get(bottleneck, 0.0) > 0]
                for flow in frozen:
                    flow.rate = level * weight[id(flow)]
            for flow in frozen:
                for res, amount in flow.demand.items():
                    free[res] = max(free[res] - flow.rate * amount, 0.0)
            frozen_ids = {id(f) for f in frozen}
            unfrozen = [f for f in unfrozen if id(f) not in frozen_ids]

    def _reschedule(self) -> None:
        self._allocate()
        self._generation += 1
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
        self.flows = [f for f in self.flows if f not in done]
        for flow in done:
            for res, amount in flow.demand.items():
                self.used[res] += amount * flow.remaining
            flow.remaining = 0.0
            flow.finished_ps = self.env.now
        self._reschedule()
        for flow in done:
            if flow.on_done:
                flow.on_done(flow)
