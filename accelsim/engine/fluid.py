"""Shared bandwidth as a fluid: flows with demands on shared resources, served at
weighted max-min fair rates, on a SimPy clock in integer picoseconds.

This is the one mechanism for contention in accelsim: HBM and L2 bandwidth and SM
issue slots between the programs of a kernel, and links between concurrent
transfers of collectives.

A :class:`Flow` is an amount of *work* (1.0 = all of it) with a demand per unit of
work on each resource it uses (bytes, or core-seconds) and a ``max_rate``: how fast
it could finish if it had every resource to itself (work per second). Rates follow
dominant-resource max-min fairness (:func:`~accelsim.engine.fair_share.max_min_rates`)
and are recomputed only when a flow starts or ends, so the cost is a few events per flow.

A flow is also the SimPy event of its own end (as a SimPy resource's request is an event):
starting it returns it, and it succeeds when its work is done::

    def program(env, pool):
        load = Flow("load", {"hbm": 1e6}, max_rate=1e3)
        yield pool.start(load)
        ...  # the flow is done: env.now is load.finished_ps

The pool processes a flow's event at its end itself (its waiters run then, in the order of
the flows' slots), before it reallocates: flows its waiters start at that instant join
the one reallocation that the ends cause (:meth:`FluidResources.start_many`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import simpy

from accelsim.engine import demands
from accelsim.engine.fair_share import EPS, PairDemand, max_min_rates_of_pairs
from accelsim.units import MAX_SIMULATED_PS, PS_PER_S, check_simulated_ps

CEIL_SLACK = 1e-15
"""Relative (and absolute, in ps) float noise ignored when rounding a time up: a few
ulps, so an early end it allows is under a thousandth of a picosecond per second."""


def _wait_ps(remaining: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Picoseconds flows with ``remaining`` work need at ``rate``, rounded up (infinite for
    stalled flows): a flow never ends before its work is done, so a replay is never faster
    than the exact fluid schedule, which bounds are made for."""
    left = np.full(len(remaining), np.inf)
    np.divide(remaining * PS_PER_S, rate, out=left, where=rate > 0)
    left[remaining <= EPS] = 0.0
    # up, but not past float noise (a time of 2e12 * (1 + 1e-16) ps is 2e12 ps)
    return np.ceil(left * (1 - CEIL_SLACK) - CEIL_SLACK)


DENSE_LIMIT_ENTRIES = 2**25
"""Flows x resources entries up to which a pool keeps its demands as one dense matrix
(256 MiB), summed by BLAS; past it, as each flow's few (resource, amount) pairs. A
16,384-GPU step's link pool has 16,384 flows on 33,024 links at once (4 GiB dense); the
benchmarks' and the model-step reports' replays checked stay far under it (1.3M at most),
and keep the BLAS rounding their results were made with."""


def _ceil_ps(left_ps: float) -> int:
    """:func:`_wait_ps`'s rounding, for one time."""
    return math.ceil(left_ps * (1 - CEIL_SLACK) - CEIL_SLACK)


@dataclass(eq=False)
class Flow(simpy.Event):
    """Work that consumes shared resources as it progresses, and the SimPy event of its
    end: :meth:`FluidResources.start` binds it to the pool's environment, and it succeeds
    (value None, as a SimPy request's does) when its work is done. A flow runs once.

    ``demand[r]`` is how much of resource ``r`` the whole flow uses (bytes, or
    core-seconds); ``max_rate`` is in flows per second (1 / its time alone). While a
    flow runs, its progress lives in the pool's arrays; ``remaining`` and ``rate``
    are filled in when it finishes (and by :meth:`FluidResources.snapshot`).
    """

    name: str
    demand: Mapping[str, float]
    max_rate: float
    remaining: float = 1.0
    rate: float = 0.0
    started_ps: int = 0
    finished_ps: int | None = None
    slot: int = field(default=-1, repr=False)
    """The pool's row for it while it runs (-1 otherwise)."""
    env: simpy.Environment | None = field(default=None, init=False, repr=False)
    """The event's environment, once started."""
    callbacks: list | None = field(default_factory=list, init=False, repr=False)
    """The event's callbacks: called with the flow at its end (None once it has ended)."""


class _Rows:
    """The running flows as arrays, one row (a *slot*) per flow, so that an event costs a
    few numpy operations however many flows run. Slots are handed out lowest first."""

    def __init__(self, resources: int) -> None:
        self.flows: list[Flow | None] = []
        self.free: list[int] = []
        """Slots not in use, the next to hand out last."""
        self.resources = resources
        self.demand: demands.DenseDemands | demands.SparseDemands = demands.DenseDemands(resources)
        self.remaining = np.zeros(0)
        self.rate = np.zeros(0)
        """Idle slots have rate 0 (every allocation zeroes them, and no time passes between
        a flow's end and the next allocation)."""
        self.max_rate = np.zeros(0)
        self.active = np.zeros(0, dtype=bool)
        self.version = np.zeros(0, dtype=np.int64)
        """Bumped whenever a slot's flow starts or changes pace: a free-running end time of
        an older version is stale."""
        self.t0 = np.zeros(0, dtype=np.int64)
        """Free-running: when the slot's progress was last written down (``rem0``)."""
        self.rem0 = np.zeros(0)

    def take(self) -> int:
        if self.free:
            return self.free.pop()
        slot = len(self.flows)
        grow = max(16, slot)
        self.flows.extend([None] * grow)
        self.free.extend(range(slot + grow - 1, slot, -1))
        if isinstance(self.demand, demands.DenseDemands) and (slot + grow) * self.resources > DENSE_LIMIT_ENTRIES:
            self.demand = self.demand.sparse()
        self.demand.grow(grow)
        for attr in ("remaining", "rate", "max_rate", "rem0"):
            setattr(self, attr, np.concatenate([getattr(self, attr), np.zeros(grow)]))
        self.t0 = np.concatenate([self.t0, np.zeros(grow, dtype=np.int64)])
        self.version = np.concatenate([self.version, np.zeros(grow, dtype=np.int64)])
        self.active = np.concatenate([self.active, np.zeros(grow, dtype=bool)])
        return slot


class _FreeRun:
    """Free-running bookkeeping: while nothing is contended every flow runs at its own
    ``max_rate`` from where it was at ``rows.t0`` (``rows.rem0`` left), its end waits in a
    heap (entries of an older version of its slot are stale) and each resource's load is a
    running sum."""

    def __init__(self, rows: _Rows, resources: int) -> None:
        self.rows = rows
        self.on = False
        self.heap: list[tuple[int, int, int]] = []  # (end ps, slot, version)
        self.load = np.zeros(resources)

    def enter(self, active: np.ndarray, load: np.ndarray, now: int) -> None:
        """Start free-running from the progress the arrays hold now."""
        rows = self.rows
        self.on = True
        self.load = load.copy()
        rows.t0[active] = now
        rows.rem0[active] = rows.remaining[active]
        ends = now + _wait_ps(rows.remaining.take(active), rows.rate.take(active))
        if ends.size:
            check_simulated_ps(float(ends.max()))
        self.heap = sorted(zip(ends.astype(np.int64).tolist(), active.tolist(),
                               rows.version[active].tolist()))  # a sorted list is a heap

    def leave(self, now: int) -> np.ndarray:
        """Write every flow's progress into the arrays; the demand served since the last
        hand-over."""
        rows = self.rows
        active = np.nonzero(rows.active)[0]
        elapsed = (now - rows.t0[active]) / PS_PER_S
        rem0 = rows.rem0[active]
        done = np.minimum(rows.rate[active] * elapsed, rem0)
        rows.remaining[active] = rem0 - done
        self.on = False
        self.heap = []
        return rows.demand.served(done, active)

    def repace(self, slots: np.ndarray, paces: np.ndarray, now: int) -> np.ndarray:
        """Bring these flows' progress to now, then restart their clocks at new paces; the
        demand they served since their last hand-over."""
        rows = self.rows
        rem0 = rows.rem0[slots]
        left = np.maximum(rem0 - rows.rate[slots] * (now - rows.t0[slots]) / PS_PER_S, 0.0)
        demand = rows.demand.take(slots)
        served = demands.served(rem0 - left, demand)
        self.load += demands.served(paces - rows.max_rate[slots], demand)
        rows.t0[slots], rows.rem0[slots], rows.rate[slots] = now, left, paces
        rows.version[slots] += 1
        ends = now + _wait_ps(left, paces)
        check_simulated_ps(float(ends.max()))
        for end, slot, version in zip(ends.astype(np.int64).tolist(), slots.tolist(), rows.version[slots].tolist()):
            heapq.heappush(self.heap, (end, slot, version))
        return served

    def end_due(self, now: int, used: np.ndarray) -> list[int]:
        """The slots whose flows end now, in slot order (as the allocation's timers take
        them), with what each had left at its last hand-over added to ``used`` (in place)."""
        rows, version, due = self.rows, self.rows.version, []
        while self.heap and self.heap[0][0] <= now:
            _, slot, at = heapq.heappop(self.heap)
            if at == version[slot]:
                due.append(slot)
        due.sort()
        for slot in due:
            rows.demand.add_scaled(used, slot, rows.rem0[slot])
            rows.demand.add_scaled(self.load, slot, -rows.max_rate[slot])
        return due


@dataclass(frozen=True)
class FlowBlock:
    """Flows a pool starts together again and again (a collective phase's transfers, each
    time its plan plays): their names, demands and ``max_rate``, with each demand checked
    and put in the pool's columns once (:meth:`FluidResources.block`)."""

    names: tuple[str, ...]
    demands: tuple[Mapping[str, float], ...]
    max_rates: tuple[float, ...]
    rows: tuple[tuple[list[int] | slice, list[float]], ...]
    """Each demand as (columns, amounts) of the pool that made the block."""
    resources: list[str] = field(repr=False, compare=False)
    """That pool's resources (the very list: a block starts on its own pool only)."""


def _checked_row(flow: Flow, names: list[str], index: Mapping[str, int]) -> tuple[list[int] | slice, list[float]]:
    """A flow's demand as (columns, amounts) of its row over every resource of a pool whose
    resources are ``names`` (``index``: each one's column), zero where it uses none: a
    transfer on a pool of thousands of links names a few."""
    demand = flow.demand
    # a kernel's flows name every resource, in order; a transfer, a few of thousands of links
    if len(demand) == len(names) and list(demand) == names:
        columns: list[int] | slice = slice(None)
    elif index.keys() >= demand.keys():
        columns = [index[name] for name in demand]
    else:
        unknown = [name for name in demand if name not in index]
        raise ValueError(f"flow {flow.name!r} uses unknown resources {sorted(unknown)}")
    if not flow.max_rate > 0:
        raise ValueError(f"flow {flow.name!r} needs a positive max_rate")
    if flow.env is not None:
        raise ValueError(f"flow {flow.name!r} was started before: a flow runs once")
    return columns, list(demand.values())


class _PoolReadouts:
    """What a :class:`FluidResources` pool reports of itself (demand served, the running flows
    as of now, rates) and the skipped work it books; the pool keeps the state these read."""

    env: simpy.Environment
    events: int
    _names: list[str]
    _used: np.ndarray
    _rows: "_Rows"
    _free: "_FreeRun"
    _last_ps: int

    @property
    def used(self) -> dict[str, float]:
        """Total demand served per resource so far."""
        return dict(zip(self._names, self._used.tolist()))

    def used_array(self) -> np.ndarray:
        """:attr:`used` as an array over the resources in capacity order (a copy)."""
        return self._used.copy()

    def snapshot(self) -> list[Flow]:
        """The running flows, each with ``remaining`` and ``rate`` filled in as of now
        (the pool's own state is not changed)."""
        now, rows = self.env.now, self._rows
        out = []
        for slot in np.flatnonzero(rows.active).tolist():
            flow = rows.flows[slot]
            rate = float(rows.rate[slot])
            if self._free.on:
                start, left = int(rows.t0[slot]), float(rows.rem0[slot])
            else:
                start, left = self._last_ps, float(rows.remaining[slot])
            flow.remaining, flow.rate = max(left - rate * (now - start) / PS_PER_S, 0.0), rate
            out.append(flow)
        return out

    def book(self, used: np.ndarray, events: int) -> None:
        """Count demand served and events on top of those replayed: work whose replay the
        owner skipped because it repeats, exactly, work already replayed (an idle pool)."""
        if self._rows.active.any():
            raise RuntimeError("booking skipped work needs an idle pool")
        self._used += used
        self.events += events

    def rates(self) -> dict[str, float]:
        """Current use of each resource per second."""
        rows = self._rows
        total = rows.demand.served(rows.rate * rows.active)
        return dict(zip(self._names, total.tolist()))


class FluidResources(_PoolReadouts):
    """A set of shared resources (capacity per second each) and the flows using them.

    ``coalesce_starts``: flows started at one instant by separate callers (say, the lanes
    of many collectives whose latency waits end together) join one reallocation, made by
    an event queued after those already due at that instant, instead of one each. Rates
    between the start and that event are not meaningful (no time passes); the allocation
    made is the one the last start would have made.

    ``free_running``: while no resource is contended (every flow at its own ``max_rate``),
    keep each flow's end time in a heap and the resources' load as a running sum, so that
    a flow's start or end costs a few scalar operations instead of a reallocation over
    every flow; the first start that contends a resource brings every flow's progress up
    to date and hands back to the allocation. Worth it where most events happen
    uncontended (the programs of a kernel); not used with an ``observer``. The end times
    are those the allocation would give, up to float rounding of the progress in between.

    Both are shortcuts, tested against the plain pool (coalescing: the same ends;
    free-running: the same ends up to float rounding). Off, each start gets its own
    reallocation and every start and end reallocates over every flow.
    """

    def __init__(self, env: simpy.Environment, capacities: Mapping[str, float], *,
                 coalesce_starts: bool = False, free_running: bool = False) -> None:
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
        """Timers scheduled (one per reallocation that leaves flows running)."""
        self.observer: Callable[[int, "FluidResources"], None] | None = None
        """Called after every reallocation with (now_ps, self): for timelines."""
        self._rows = _Rows(len(self._names))
        self._generation = 0
        self._last_ps = 0
        self._in_callbacks = False
        self._due = np.zeros(0, dtype=np.int64)
        self._pairs: tuple[np.ndarray, PairDemand] | None = None
        """The running flows and their demands as pairs, from the last allocation of a pool
        that keeps pairs, while they are the flows running at those rates."""
        self._coalesce = coalesce_starts
        self._flush_pending = False
        self._free_running = free_running
        self._free = _FreeRun(self._rows, len(self._names))

    # ------------------------------------------------------------ public

    def start(self, flow: Flow) -> Flow:
        """Add a flow now; it is the event that succeeds when its work is done."""
        self.start_many([flow])
        return flow

    def start_many(self, flows: list[Flow]) -> list[Flow]:
        """Add several flows at once (one reallocation); they are the events of their ends.
        Flows started by the waiters of flows that end join those ends' reallocation."""
        return self._place(flows, [_checked_row(flow, self._names, self._index) for flow in flows])

    def block(self, names: list[str], demands: list[Mapping[str, float]], max_rates: list[float]) -> FlowBlock:
        """Flows to start together, maybe many times (:meth:`start_block`): checked and
        put in this pool's columns once."""
        rows = tuple(_checked_row(Flow(name=name, demand=demand, max_rate=rate), self._names, self._index)
                     for name, demand, rate in zip(names, demands, max_rates))
        return FlowBlock(names=tuple(names), demands=tuple(demands), max_rates=tuple(max_rates), rows=rows,
                         resources=self._names)

    def start_block(self, block: FlowBlock) -> list[Flow]:
        """:meth:`start_many` of new flows made from ``block`` (made by :meth:`block` of
        this pool): the same flows, placed without checking their demands again."""
        if block.resources is not self._names:
            raise ValueError("a flow block starts on the pool that made it")
        flows = [Flow(name=name, demand=demand, max_rate=rate)
                 for name, demand, rate in zip(block.names, block.demands, block.max_rates)]
        return self._place(flows, block.rows)

    def _place(self, flows: list[Flow], demands: Sequence[tuple[list[int] | slice, list[float]]]) -> list[Flow]:
        if not self._free.on:
            self._advance()
        rows, now, free, env = self._rows, self.env.now, self._free, self.env
        slots = [rows.take() for _ in flows]
        for flow, slot in zip(flows, slots):
            rows.flows[slot] = flow
            flow.slot, flow.started_ps, flow.env = slot, now, env
        rows.demand.set_many(slots, demands)
        if len(slots) == 1:  # one flow, the common case of uneven kernels: scalar writes
            slot = slots[0]
            rows.version[slot] += 1
            rows.remaining[slot] = 1.0
            rows.max_rate[slot] = flows[0].max_rate
            rows.active[slot] = True
        else:
            at = np.array(slots, dtype=np.int64)
            rows.version[at] += 1
            rows.remaining[at] = 1.0
            rows.max_rate[at] = [flow.max_rate for flow in flows]
            rows.active[at] = True
        self._pairs = None
        if free.on:  # at its own pace from now: its end goes on the heap
            for flow, slot in zip(flows, slots):
                rate = rows.rate[slot] = flow.max_rate
                rows.t0[slot], rows.rem0[slot] = now, 1.0
                rows.demand.add_scaled(free.load, slot, rate)
                alone_ps = PS_PER_S / rate
                if not now + alone_ps <= MAX_SIMULATED_PS:
                    check_simulated_ps(now + alone_ps)
                heapq.heappush(free.heap, (now + _ceil_ps(alone_ps), slot, int(rows.version[slot])))
        if not self._in_callbacks:
            if not self._coalesce:
                self._reschedule()
            elif not self._flush_pending:
                self._flush_pending = True
                flush = self.env.event()
                flush.callbacks.append(lambda _e: self._flush())
                flush.succeed()
        return flows

    def set_max_rates(self, flows: list[Flow], rates: list[float]) -> None:
        """Change running flows' ``max_rate`` from now on (say, a program whose SM's other
        residents have finished): their progress so far stands, what is left goes at the
        new pace. Within the completion callbacks of an instant it joins its reallocation."""
        if not flows:
            return
        for flow, rate in zip(flows, rates):
            if not rate > 0:
                raise ValueError(f"flow {flow.name!r} needs a positive max_rate")
            if flow.slot < 0 or self._rows.flows[flow.slot] is not flow:
                raise ValueError(f"flow {flow.name!r} is not running")
            flow.max_rate = rate
        slots = np.fromiter((flow.slot for flow in flows), dtype=np.int64, count=len(flows))
        paces = np.asarray(rates, dtype=float)
        if self._free.on:
            self._used += self._free.repace(slots, paces, self.env.now)
        else:
            self._advance()
            self._pairs = None
        self._rows.max_rate[slots] = paces
        if not self._in_callbacks:
            self._reschedule()

    # ------------------------------------------------------------ the allocation

    def _advance(self) -> None:
        """Move every flow's progress to now at its current rate."""
        dt = (self.env.now - self._last_ps) / PS_PER_S
        self._last_ps = self.env.now
        if dt <= 0:
            return
        rows = self._rows
        done = np.minimum(rows.rate * dt, rows.remaining)
        rows.remaining -= done
        if self._pairs is not None:  # the running flows are those of the last allocation
            active, pairs = self._pairs
            self._used[pairs.used] += pairs.served(done[active])
        else:
            self._used += rows.demand.served(done)

    def _allocate(self) -> None:
        """Every running flow's rate (:func:`~accelsim.engine.fair_share.max_min_rates`);
        while nothing is contended, each at its own pace (and free-running, if allowed)."""
        rows = self._rows
        active = np.nonzero(rows.active)[0]
        rows.rate[:] = 0.0
        self._pairs = None
        if active.size == 0:
            return
        demand = rows.demand.take(active)
        max_rate = rows.max_rate.take(active)
        if isinstance(demand, demands.SparseBlock):
            self._allocate_pairs(active, PairDemand(demand.columns, demand.amounts, self._capacity), max_rate)
            return
        load = demands.served(max_rate, demand)
        if (load <= self._capacity).all():
            rows.rate[active] = max_rate  # nothing is contended: every flow at its own pace
            if self._free_running and self.observer is None:
                self._free.enter(active, load, self.env.now)
            return
        rows.rate[active] = demands.fair_rates(demand, max_rate, self._capacity)

    def _allocate_pairs(self, active: np.ndarray, pairs: PairDemand, max_rate: np.ndarray) -> None:
        """:meth:`_allocate` of a pool that keeps demands as pairs: the sums run over the
        resources in use (the same sums), and the pairs are kept for :meth:`_advance`
        until flows start, end or change pace."""
        rows = self._rows
        load = pairs.served(max_rate)
        if (load <= pairs.capacity).all():
            rows.rate[active] = max_rate
            if self._free_running and self.observer is None:
                every = np.zeros(len(self._capacity))
                every[pairs.used] = load
                self._free.enter(active, every, self.env.now)
                return
        else:
            rows.rate[active] = max_min_rates_of_pairs(pairs, max_rate)
        self._pairs = (active, pairs)

    def _flush(self) -> None:
        """The coalesced reallocation, unless a timer's has made it already."""
        if self._flush_pending:
            self._reschedule()

    def _reschedule(self) -> None:
        self._flush_pending = False
        free = self._free
        if free.on and not (free.load <= self._capacity).all():
            self._used += free.leave(self.env.now)
            self._last_ps = self.env.now
        if not free.on:
            self._allocate()  # may start free-running
        self._generation += 1
        if self.observer is not None:
            self.observer(self.env.now, self)
        if free.on:
            heap, version = free.heap, self._rows.version
            while heap and heap[0][2] != version[heap[0][1]]:  # stale: the flow changed pace
                heapq.heappop(heap)
            if heap:
                self._schedule(heap[0][0] - self.env.now)
            return
        active = np.nonzero(self._rows.active)[0]
        if active.size == 0:
            return
        left = _wait_ps(self._rows.remaining.take(active), self._rows.rate.take(active))
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

    # ------------------------------------------------------------ ends

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return
        rows, now = self._rows, self.env.now
        done = []
        if self._free.on:
            due = self._free.end_due(now, self._used)
        else:
            self._advance()
            due = self._due.tolist()
            rows.demand.add_scaled_many(self._used, self._due, rows.remaining[self._due])
        at = due[0] if len(due) == 1 else np.array(due, dtype=np.int64)  # one: scalar reads and writes
        for slot, rate in zip(due, [float(rows.rate[at])] if len(due) == 1 else rows.rate[at].tolist()):
            flow = rows.flows[slot]
            flow.remaining, flow.rate, flow.finished_ps = 0.0, rate, now
            flow.slot = -1
            done.append(flow)
            rows.flows[slot] = None
        rows.remaining[at] = rows.rate[at] = 0.0
        rows.active[at] = False
        self._pairs = None
        rows.version[at] += 1
        rows.free.extend(due)
        if len(rows.free) == len(rows.flows):
            # Idle: hand out slots from 0 again, as to a new pool. A slot orders flows that
            # end in the same picosecond, so what runs next (a kernel after a barrier) then
            # does not depend on the order flows before it happened to free theirs.
            rows.free.sort(reverse=True)
        self._in_callbacks = True  # flows started by the waiters join one reallocation
        try:
            for flow in done:
                # succeed the flow (an event) and run its callbacks now, as
                # simpy.Environment.step does when it pops an event: its waiters act
                # within this event, before the reallocation below
                flow._ok, flow._value = True, None
                callbacks, flow.callbacks = flow.callbacks, None
                for callback in callbacks:
                    callback(flow)
        finally:
            self._in_callbacks = False
        self._reschedule()
