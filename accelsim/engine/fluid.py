"""Shared bandwidth as a fluid: flows with demands on shared resources, served at
weighted max-min fair rates, on a SimPy clock in integer picoseconds.

This is the one mechanism for contention in accelsim: HBM and L2 bandwidth and SM
issue slots between the programs of a kernel, and links between concurrent
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

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import simpy

from accelsim.units import PS_PER_S, check_simulated_ps

_EPS = 1e-12
CEIL_SLACK = 1e-15
"""Relative (and absolute, in ps) float noise ignored when rounding a time up: a few
ulps, so an early end it allows is under a thousandth of a picosecond per second."""


TIE_SLACK = 1e-12
"""Relative difference under which two resources' saturation levels are one level (float
noise of sums in another order); freezing a flow at the lower of the two never takes
more than a resource's capacity."""


def _wait_ps(remaining: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Picoseconds flows with ``remaining`` work need at ``rate``, rounded up (infinite for
    stalled flows): a flow never ends before its work is done, so a replay is never faster
    than the exact fluid schedule, which bounds are made for."""
    left = np.full(len(remaining), np.inf)
    np.divide(remaining * PS_PER_S, rate, out=left, where=rate > 0)
    left[remaining <= _EPS] = 0.0
    # up, but not past float noise (a time of 2e12 * (1 + 1e-16) ps is 2e12 ps)
    return np.ceil(left * (1 - CEIL_SLACK) - CEIL_SLACK)


def _ceil_ps(left_ps: float) -> int:
    """:meth:`FluidResources._time_left_ps`'s rounding, for one time."""
    return math.ceil(left_ps * (1 - CEIL_SLACK) - CEIL_SLACK)


@dataclass(eq=False)
class Flow:
    """Work that consumes shared resources as it progresses.

    ``demand[r]`` is how much of resource ``r`` the whole flow uses (bytes, or
    core-seconds); ``max_rate`` is in flows per second (1 / its time alone). While a
    flow runs, its progress lives in the pool's arrays; ``remaining`` and ``rate``
    are filled in when it finishes (and by :meth:`FluidResources.snapshot`).
    """

    name: str
    demand: Mapping[str, float]
    max_rate: float
    on_done: Callable[["Flow"], None] | None = None
    count: int = 1
    """How many identical programs (or transfers) this flow stands for."""
    tag: object = None
    """Free for the owner (e.g. which core group a cohort runs on)."""
    remaining: float = 1.0
    rate: float = 0.0
    started_ps: int = 0
    finished_ps: int | None = None
    slot: int = field(default=-1, repr=False)
    """The pool's row for it while it runs (-1 otherwise)."""


class FluidResources:
    """A set of shared resources (capacity per second each) and the flows using them.

    Flow state is kept as arrays (one row per slot) so that an event costs a few
    numpy operations however many flows are running.
    """

    def __init__(self, env: simpy.Environment, capacities: Mapping[str, float], *,
                 coalesce_starts: bool = False, free_running: bool = False) -> None:
        """``coalesce_starts``: flows started at one instant by separate callers (say, the
        lanes of many collectives whose latency waits end together) join one
        reallocation, made by an event queued after those already due at that instant,
        instead of one each. Rates between the start and that event are not meaningful
        (no time passes); the allocation made is the one the last start would have made.

        ``free_running``: while no resource is contended (every flow at its own
        ``max_rate``), keep each flow's end time in a heap and the resources' load as a
        running sum, so that a flow's start or end costs a few scalar operations instead
        of a reallocation over every flow; the first start that contends a resource
        brings every flow's progress up to date and hands back to the allocation. Worth
        it where most events happen uncontended (the programs of a kernel); not used with
        an ``observer``. The end times are those the allocation would give, up to float
        rounding of the progress in between."""
        for name, cap in capacities.items():
            if not cap > 0:
                raise ValueError(f"resource {name!r} needs a positive capacity, got {cap!r}")
        self.env = env
        self.capacities = dict(capacities)
        self._names = list(capacities)
        self._index = {name: i for i, name in enumerate(self._names)}
        self._capacity = np.array([capacities[n] for n in self._names], dtype=float)
        self._used = np.zeros(len(self._names))
        self.events = 0
        self.observer: Callable[[int, "FluidResources"], None] | None = None
        """Called after every reallocation with (now_ps, self): for timelines."""
        self._slots: list[Flow | None] = []
        self._free_slots: list[int] = []
        self._demand = np.zeros((0, len(self._names)))
        self._remaining = np.zeros(0)
        self._rate = np.zeros(0)
        self._max_rate = np.zeros(0)
        self._active = np.zeros(0, dtype=bool)
        self._generation = 0
        self._last_ps = 0
        self._in_callbacks = False
        self._due = np.zeros(0, dtype=np.int64)
        self._coalesce = coalesce_starts
        self._flush_pending = False
        self._free_running = free_running
        self._free = False
        """Free-running now: rates are every flow's max_rate; progress since ``_t0`` (from
        ``_rem0``) is implicit, ends are in ``_heap`` and the load is ``_load``."""
        self._t0 = np.zeros(0, dtype=np.int64)
        self._rem0 = np.zeros(0)
        self._heap: list[tuple[int, int, int]] = []  # (end ps, slot, version)
        self._version = np.zeros(0, dtype=np.int64)
        """Per slot, bumped whenever its flow starts or changes pace: a heap entry of an
        older version is stale and skipped."""
        self._load = np.zeros(len(self._names))

    # ------------------------------------------------------------ public

    def start(self, flow: Flow) -> None:
        """Add a flow now; its ``on_done`` is called when its work is done."""
        self.start_many([flow])

    def start_many(self, flows: list[Flow]) -> None:
        """Add several flows at once (one reallocation)."""
        rows = []
        for flow in flows:
            if not self._index.keys() >= flow.demand.keys():
                unknown = [name for name in flow.demand if name not in self._index]
                raise ValueError(f"flow {flow.name!r} uses unknown resources {sorted(unknown)}")
            if not flow.max_rate > 0:
                raise ValueError(f"flow {flow.name!r} needs a positive max_rate")
            rows.append(self._row(flow.demand))
        if not self._free:
            self._advance()
        now = self.env.now
        for flow, (columns, amounts) in zip(flows, rows):
            slot = self._take_slot()
            self._slots[slot] = flow
            flow.slot = slot
            self._version[slot] += 1
            if not isinstance(columns, slice):
                self._demand[slot] = 0.0
            self._demand[slot, columns] = amounts
            self._remaining[slot] = 1.0
            self._max_rate[slot] = flow.max_rate
            self._active[slot] = True
            flow.started_ps = now
            if self._free:
                self._rate[slot] = flow.max_rate
                self._t0[slot], self._rem0[slot] = now, 1.0
                self._load += flow.max_rate * self._demand[slot]
                heapq.heappush(self._heap, (now + _ceil_ps(PS_PER_S / flow.max_rate), slot, int(self._version[slot])))
        if self._in_callbacks:
            return
        if not self._coalesce:
            self._reschedule()
        elif not self._flush_pending:
            self._flush_pending = True
            flush = self.env.event()
            flush.callbacks.append(lambda _e: self._flush())
            flush.succeed()

    def set_max_rates(self, flows: list[Flow], rates: list[float]) -> None:
        """Change running flows' ``max_rate`` from now on (say, a program whose SM's other
        residents have finished): their progress so far stands, what is left goes at the
        new pace. Inside ``on_done`` callbacks it joins their reallocation."""
        if not flows:
            return
        for flow, rate in zip(flows, rates):
            if not rate > 0:
                raise ValueError(f"flow {flow.name!r} needs a positive max_rate")
            if flow.slot < 0 or self._slots[flow.slot] is not flow:
                raise ValueError(f"flow {flow.name!r} is not running")
            flow.max_rate = rate
        slots = np.fromiter((flow.slot for flow in flows), dtype=np.int64, count=len(flows))
        paces = np.asarray(rates, dtype=float)
        if self._free:
            # bring these flows' progress to now, then restart their clocks at the new paces
            now = self.env.now
            rem0 = self._rem0[slots]
            left = np.maximum(rem0 - self._rate[slots] * (now - self._t0[slots]) / PS_PER_S, 0.0)
            demand = self._demand[slots]
            self._used += (rem0 - left) @ demand
            self._load += (paces - self._max_rate[slots]) @ demand
            self._t0[slots], self._rem0[slots], self._rate[slots] = now, left, paces
            self._version[slots] += 1
            for end, slot, version in zip((now + _wait_ps(left, paces)).astype(np.int64).tolist(), slots.tolist(),
                                          self._version[slots].tolist()):
                heapq.heappush(self._heap, (end, slot, version))
        else:
            self._advance()
        self._max_rate[slots] = paces
        if self._in_callbacks:
            return
        self._reschedule()

    @property
    def used(self) -> dict[str, float]:
        """Total demand served per resource so far."""
        return dict(zip(self._names, self._used.tolist()))

    def snapshot(self) -> list[Flow]:
        """The running flows, each with ``remaining`` and ``rate`` filled in as of now
        (the pool's own state is not changed)."""
        now = self.env.now
        out = []
        for slot in np.flatnonzero(self._active).tolist():
            flow = self._slots[slot]
            rate = float(self._rate[slot])
            if self._free:
                start, left = int(self._t0[slot]), float(self._rem0[slot])
            else:
                start, left = self._last_ps, float(self._remaining[slot])
            flow.remaining, flow.rate = max(left - rate * (now - start) / PS_PER_S, 0.0), rate
            out.append(flow)
        return out

    def used_array(self) -> np.ndarray:
        """:attr:`used` as an array over the resources in capacity order (a copy)."""
        return self._used.copy()

    def book(self, used: np.ndarray, events: int) -> None:
        """Count demand served and events on top of those replayed: work whose replay the
        owner skipped because it repeats, exactly, work already replayed (an idle pool)."""
        if self._active.any():
            raise RuntimeError("booking skipped work needs an idle pool")
        self._used += used
        self.events += events

    def rates(self) -> dict[str, float]:
        """Current use of each resource per second."""
        total = (self._rate * self._active) @ self._demand
        return dict(zip(self._names, total.tolist()))

    # ------------------------------------------------------------ internals

    def _row(self, demand: Mapping[str, float]) -> tuple[list[int] | slice, list[float]]:
        """A flow's demand as (columns, amounts) of its row over every resource (zero
        where it uses none): a transfer on a pool of thousands of links names a few."""
        if list(demand) == self._names:  # a kernel's flows name every resource, in order
            return slice(None), list(demand.values())
        return [self._index[name] for name in demand], list(demand.values())

    def _take_slot(self) -> int:
        if self._free_slots:
            return self._free_slots.pop()
        slot = len(self._slots)
        grow = max(16, slot)
        self._slots.extend([None] * grow)
        self._free_slots.extend(range(slot + grow - 1, slot, -1))
        self._demand = np.vstack([self._demand, np.zeros((grow, len(self._names)))])
        for attr in ("_remaining", "_rate", "_max_rate", "_rem0"):
            setattr(self, attr, np.concatenate([getattr(self, attr), np.zeros(grow)]))
        self._t0 = np.concatenate([self._t0, np.zeros(grow, dtype=np.int64)])
        self._version = np.concatenate([self._version, np.zeros(grow, dtype=np.int64)])
        self._active = np.concatenate([self._active, np.zeros(grow, dtype=bool)])
        return slot

    def _advance(self) -> None:
        """Move every flow's progress to now at its current rate."""
        dt = (self.env.now - self._last_ps) / PS_PER_S
        self._last_ps = self.env.now
        if dt <= 0:
            return
        # idle slots have rate 0 (every allocation zeroes them, and no time passes
        # between a flow's end and the next allocation)
        done = np.minimum(self._rate * dt, self._remaining)
        self._remaining -= done
        self._used += done @ self._demand

    def _allocate(self) -> None:
        """Dominant-resource max-min fairness by progressive filling.

        Every unfrozen flow runs at ``level * weight``, where ``weight`` makes its
        largest share of any resource equal to ``level``. The level rises until a
        resource saturates (the flows using it freeze there) or flows reach their own
        ``max_rate`` (they freeze at it); repeat with what is left.
        """
        active = np.nonzero(self._active)[0]
        self._rate[:] = 0.0
        if active.size == 0:
            return
        demand = self._demand.take(active, axis=0)
        max_rate = self._max_rate.take(active)
        load = max_rate @ demand
        if (load <= self._capacity).all():
            self._rate[active] = max_rate  # nothing is contended: every flow at its own pace
            if self._free_running and self.observer is None:
                self._enter_free(active, load)
            return
        # only the resources some flow uses: a pool of many links with few in use at once
        # costs what those few do (unused columns never bottleneck or weigh)
        used = np.flatnonzero(demand.any(axis=0))
        capacity = self._capacity[used]
        demand = demand[:, used]
        dominant = (demand / capacity).max(axis=1)
        rate = np.where(dominant > 0, 0.0, max_rate)  # a flow using nothing shared runs free
        unfrozen = dominant > 0
        weight = np.divide(1.0, dominant, out=np.zeros_like(dominant), where=unfrozen)
        free = capacity - rate @ demand
        cap_level = np.divide(max_rate, weight, out=np.full_like(max_rate, np.inf), where=unfrozen)
        # each resource's load from the unfrozen flows; a freeze changes it only in the
        # columns the frozen flows use, so only those are summed again (exactly, so a
        # resource whose flows are all frozen has no load left, not float residue)
        load = (weight * unfrozen) @ demand
        while unfrozen.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                levels = np.where(load > _EPS, free / load, np.inf)
            level = levels.min()
            capped = unfrozen & (cap_level <= level)
            if capped.any():
                freeze = capped
                rate[freeze] = max_rate[freeze]
            else:
                # every resource that saturates at this level at once (a symmetric
                # collective has thousands of links in a few classes): freezing them
                # one by one would find the same level for each of the others
                bottlenecks = np.flatnonzero(levels <= level * (1 + TIE_SLACK))
                freeze = unfrozen & (demand[:, bottlenecks] > 0).any(axis=1)
                rate[freeze] = level * weight[freeze]
            frozen_demand = demand[freeze]
            free = np.maximum(free - rate[freeze] @ frozen_demand, 0.0)
            unfrozen &= ~freeze
            touched = np.flatnonzero(frozen_demand.any(axis=0))
            load[touched] = (weight * unfrozen) @ demand[:, touched]
        self._rate[active] = rate

    def _time_left_ps(self, slots: np.ndarray) -> np.ndarray:
        """Picoseconds the flows in ``slots`` need at their current rates (:func:`_wait_ps`)."""
        return _wait_ps(self._remaining.take(slots), self._rate.take(slots))

    def _flush(self) -> None:
        """The coalesced reallocation, unless a timer's has made it already."""
        if self._flush_pending:
            self._reschedule()

    def _enter_free(self, active: np.ndarray, load: np.ndarray) -> None:
        """Start free-running from the progress the arrays hold now."""
        self._free = True
        self._load = load.copy()
        now = self.env.now
        self._t0[active] = now
        self._rem0[active] = self._remaining[active]
        ends = now + self._time_left_ps(active)
        if ends.size:
            check_simulated_ps(float(ends.max()))
        self._heap = sorted(zip(ends.astype(np.int64).tolist(), active.tolist(),
                                self._version[active].tolist()))  # a sorted list is a heap

    def _leave_free(self) -> None:
        """Bring every flow's progress up to date in the arrays; the allocation takes over."""
        active = np.nonzero(self._active)[0]
        elapsed = (self.env.now - self._t0[active]) / PS_PER_S
        rem0 = self._rem0[active]
        done = np.minimum(self._rate[active] * elapsed, rem0)
        self._remaining[active] = rem0 - done
        self._used += done @ self._demand[active]
        self._last_ps = self.env.now
        self._free = False
        self._heap = []

    def _reschedule(self) -> None:
        self._flush_pending = False
        if self._free and not (self._load <= self._capacity).all():
            self._leave_free()
        if not self._free:
            self._allocate()  # may start free-running
        self._generation += 1
        if self.observer is not None:
            self.observer(self.env.now, self)
        if self._free:
            heap, version = self._heap, self._version
            while heap and heap[0][2] != version[heap[0][1]]:  # stale: the flow changed pace
                heapq.heappop(heap)
            if heap:
                self._schedule(heap[0][0] - self.env.now)
            return
        active = np.nonzero(self._active)[0]
        if active.size == 0:
            return
        left = self._time_left_ps(active)
        soonest = left.min()
        if not np.isfinite(soonest):
            raise RuntimeError("fluid flows can make no progress (all rates are zero)")
        # rates hold until the timer fires (or a newer generation replaces it), so the
        # flows due then are known now
        self._due = active[left == soonest]
        self._schedule(int(soonest))

    def _schedule(self, delay_ps: int) -> None:
        check_simulated_ps(self.env.now + delay_ps)
        generation = self._generation
        event = self.env.timeout(delay_ps)
        event.callbacks.append(lambda _e: self._on_timer(generation))
        self.events += 1

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return
        now = self.env.now
        if self._free:
            due = []
            while self._heap and self._heap[0][0] <= now:
                _, slot, version = heapq.heappop(self._heap)
                if version == self._version[slot]:
                    due.append(slot)
            due.sort()  # slot order, as the allocation's timers take them
        else:
            self._advance()
            due = self._due.tolist()
        done = []
        for slot in due:
            flow = self._slots[slot]
            if self._free:  # all of what was left at the last hand-over is served by now
                self._used += self._demand[slot] * self._rem0[slot]
                self._load -= self._max_rate[slot] * self._demand[slot]
            else:
                self._used += self._demand[slot] * self._remaining[slot]
            flow.remaining, flow.rate, flow.finished_ps = 0.0, float(self._rate[slot]), now
            self._remaining[slot] = 0.0
            self._rate[slot] = 0.0  # idle slots have rate 0 (see _advance)
            self._active[slot] = False
            self._slots[slot] = None
            flow.slot = -1
            self._version[slot] += 1
            self._free_slots.append(slot)
            done.append(flow)
        if len(self._free_slots) == len(self._slots):
            # Idle: hand out slots from 0 again, as to a new pool. A slot orders flows that
            # end in the same picosecond, so what runs next (a kernel after a barrier) then
            # does not depend on the order flows before it happened to free theirs.
            self._free_slots.sort(reverse=True)
        self._in_callbacks = True  # flows started by callbacks join one reallocation
        try:
            for flow in done:
                if flow.on_done:
                    flow.on_done(flow)
        finally:
            self._in_callbacks = False
        self._reschedule()
