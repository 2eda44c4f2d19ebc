"""A device's compute in a system replay: the compute ops running at once share it
(processor sharing), collectives running on the device take SMs or HBM bandwidth from
them, and its time is accounted as computing, communicating, both or idle.

Processor sharing is max-min fairness on one resource (the device) whose every flow
wants all of it: ``k`` ops running at once each get ``1/k`` of the device, an op at
``(1 - slowdown) / k`` of its speed alone, where the slowdown is what the collectives on
the device take (:class:`CommLoad`). Every op of one *lane* (compute-bound or
memory-bound: the slowdown is per lane) then progresses at the same pace, so one clock
per lane (the work, in picoseconds at full speed, each of its ops has done since the lane
was last empty) stands for all of them: an op ends when its lane's clock reaches its
start reading plus its work. A start, an end or a collective's start or end costs
O(log ops running) instead of a pass over every running op (issue 29: 10^4 ops on 10^4
streams of one device took 29 s). :class:`PerOpCompute` is the plain path, every op's
work advanced on its own, kept to test this one against.

Ends are rounded to the picosecond as the replay has always rounded them (to the
nearest, ties to even), and an op that starts joins at once: the pool's rules for flows.
Starting an op returns a SimPy event that succeeds at its end, processed at once by the
device (its waiters run before the device's next allocation), as the fluid pool does.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

HBM_SHARE_CAP = 0.5
"""The most of a GPU's HBM bandwidth collectives take from compute together (the rest
stays with the compute kernels, as the memory controllers interleave them)."""


def succeed_now(event: simpy.Event, value: object = None) -> None:
    """Succeed ``event`` and run its callbacks now, as ``simpy.Environment.step`` does when
    it pops an event: its waiters act within the owner's own event."""
    event._ok = True
    event._value = value
    callbacks, event.callbacks = event.callbacks, None
    for callback in callbacks:
        callback(event)


@dataclass
class CommLoad:
    """What the collectives running on a device take from its compute: on GPUs
    ``sm_fraction`` of a compute-bound op's speed, and of a memory-bound op's either
    ``hbm_fraction`` or, where that is ``None``, the running collectives' own HBM shares
    summed (at most :data:`HBM_SHARE_CAP`).

    A collective that holds an SM budget (its op's ``sm_budget``) takes those SMs of the
    device's ``sms`` instead of ``sm_fraction``: compute-bound ops beside it run on the
    SMs left, at ``(sms - budget) / sms`` of their speed. Budgets of collectives running
    at once add up (and ``sm_fraction`` once more while one without a budget runs too),
    up to all SMs but one: the collectives' blocks past that wait for SMs, which the
    replay does not model, and the compute already resident keeps one."""

    sm_fraction: float
    hbm_fraction: float | None
    sms: int = 1
    """Streaming multiprocessors of the device (what budgets are shares of)."""
    active: int = 0
    """Collectives and transfers moving data on the device now."""
    hbm_share: float = 0.0
    budgeted: int = 0
    """Of the ``active``, those that hold an SM budget."""
    budget_sms: float = 0.0
    """Their budgets summed."""

    def slowdown(self, memory_bound: bool) -> float:
        if not self.active:
            return 0.0
        if not memory_bound:
            return self._sm_share()
        if self.hbm_fraction is not None:
            return self.hbm_fraction
        return min(HBM_SHARE_CAP, self.hbm_share)

    def _sm_share(self) -> float:
        if not self.budgeted:
            return self.sm_fraction
        unbudgeted = self.sm_fraction if self.active > self.budgeted else 0.0
        return min((self.sms - 1) / self.sms, self.budget_sms / self.sms + unbudgeted)

    def change(self, delta: int, hbm_share: float, sm_budget: float | None = None) -> bool:
        """A collective with ``hbm_share`` (and ``sm_budget`` SMs, if it holds a budget)
        starts (+1) or ends (-1); whether the slowdowns changed."""
        before = self._state()
        self.active += delta
        self.hbm_share = self.hbm_share + delta * hbm_share if self.active else 0.0
        if sm_budget is not None:
            self.budgeted += delta
            self.budget_sms = self.budget_sms + delta * sm_budget if self.budgeted else 0.0
        return self._state() != before

    def _state(self) -> tuple:
        return bool(self.active), self.hbm_share, self.active > self.budgeted, self.budget_sms


@dataclass
class Activity:
    """A device's time so far: only computing, only communicating, both (picoseconds)."""

    last_ps: int = 0
    compute_only_ps: int = 0
    comm_only_ps: int = 0
    both_ps: int = 0

    def note(self, now: int, computing: bool, communicating: bool) -> None:
        """Book the time since the last note to the state that held until ``now``."""
        dt = now - self.last_ps
        self.last_ps = now
        if not dt:
            return
        if computing and communicating:
            self.both_ps += dt
        elif computing:
            self.compute_only_ps += dt
        elif communicating:
            self.comm_only_ps += dt


class _SharedDevice:
    """What both ways of sharing a device have in common: the running ops' count, the
    collectives' slowdowns, the time accounts and the timer of the next ends. Subclasses
    keep the ops' progress (:meth:`_add`, :meth:`_progress`, :meth:`_soonest`,
    :meth:`_remove`)."""

    def __init__(self, env: simpy.Environment, comm: CommLoad, after_ends: Callable[[], None]) -> None:
        """``after_ends`` runs once the ends of an instant have been signalled (the replay
        drains the work their waiters queued)."""
        self.env = env
        self.comm = comm
        self.activity = Activity()
        self._after_ends = after_ends
        self._running = 0
        self._started = 0
        self._last_ps = 0
        self._generation = 0

    def run(self, work_ps: int, memory_bound: bool) -> simpy.Event:
        """Start an op that takes ``work_ps`` alone; its event succeeds at its end."""
        self._advance()
        done = self.env.event()
        self._add(self._started, float(work_ps), memory_bound, done)
        self._started += 1
        self._running += 1
        self._reschedule()
        return done

    def comm_changed(self, delta: int, hbm_share: float, sm_budget: float | None = None) -> None:
        """A collective with ``hbm_share`` (and ``sm_budget`` SMs, if it holds a budget)
        starts (+1) or ends (-1) on the device."""
        self._advance()
        if self.comm.change(delta, hbm_share, sm_budget) and self._running:
            self._reschedule()

    def account(self) -> None:
        """Bring the time accounts up to now."""
        self.activity.note(self.env.now, self._running > 0, self.comm.active > 0)

    def _rate(self, memory_bound: bool) -> float:
        """An op's pace: work (ps alone) per ps."""
        return (1.0 - self.comm.slowdown(memory_bound)) / self._running

    def _advance(self) -> None:
        now = self.env.now
        dt = now - self._last_ps
        self._last_ps = now
        if dt and self._running:
            self._progress(dt)
        self.activity.note(now, self._running > 0, self.comm.active > 0)  # account(), at the now in hand

    def _reschedule(self) -> None:
        self._generation += 1
        if not self._running:
            return
        soonest, due = self._soonest()
        generation = self._generation
        timer = self.env.timeout(soonest)
        timer.callbacks.append(lambda _e: self._on_timer(generation, due))

    def _on_timer(self, generation: int, due: object) -> None:
        if generation != self._generation:
            return
        self._advance()
        ended = self._remove(due)
        self._running -= len(ended)
        self._reschedule()
        for event in ended:
            succeed_now(event)
        self._after_ends()

    def _add(self, order: int, work_ps: float, memory_bound: bool, done: simpy.Event) -> None:
        raise NotImplementedError

    def _progress(self, dt_ps: int) -> None:
        raise NotImplementedError

    def _soonest(self) -> tuple[int, object]:
        """Picoseconds to the next ends (rounded to the nearest), and what tells which
        ops end then (for :meth:`_remove`, at that time)."""
        raise NotImplementedError

    def _remove(self, due: object) -> list[simpy.Event]:
        """Take out the ops that end now; their events in start order."""
        raise NotImplementedError


@dataclass
class _Lane:
    """The running ops of one slowdown (compute- or memory-bound), on one clock."""

    memory_bound: bool
    clock: float = 0.0
    """Work (ps at full speed) each op of the lane has done since it was last empty."""
    ops: list[tuple[float, int, simpy.Event]] = field(default_factory=list)
    """A heap of (clock reading at which the op ends, start order, its event)."""


class DeviceCompute(_SharedDevice):
    """A device's (or a folded class's) compute ops, sharing it: one clock per lane (see
    the module doc); a start, an end or a slowdown's change costs O(log ops running)."""

    def __init__(self, env: simpy.Environment, comm: CommLoad, after_ends: Callable[[], None]) -> None:
        super().__init__(env, comm, after_ends)
        self._lanes = (_Lane(memory_bound=False), _Lane(memory_bound=True))

    def _add(self, order: int, work_ps: float, memory_bound: bool, done: simpy.Event) -> None:
        lane = self._lanes[memory_bound]
        heapq.heappush(lane.ops, (lane.clock + work_ps, order, done))

    def _progress(self, dt_ps: int) -> None:
        for lane in self._lanes:
            if lane.ops:
                lane.clock += dt_ps * self._rate(lane.memory_bound)

    def _soonest(self) -> tuple[int, tuple[int, list[tuple[float, float]]]]:
        readings = []
        soonest = None
        for lane in self._lanes:
            rate = self._rate(lane.memory_bound)
            readings.append((lane.clock, rate))
            if lane.ops:
                left = round((lane.ops[0][0] - lane.clock) / rate)
                if left < 0:
                    left = 0
                if soonest is None or left < soonest:
                    soonest = left
        # the ops that end then are each lane's first in its heap, found when they end
        # from the readings of now (rates hold until then): listing them here would cost
        # a pass over every op that ends with them at every start before
        return soonest, (soonest, readings)

    def _remove(self, due: tuple[int, list[tuple[float, float]]]) -> list[simpy.Event]:
        soonest, readings = due
        ended = []
        for lane, (clock, rate) in zip(self._lanes, readings):
            while lane.ops and max(0, round((lane.ops[0][0] - clock) / rate)) == soonest:
                _, order, event = heapq.heappop(lane.ops)
                ended.append((order, event))
            if not lane.ops:
                lane.clock = 0.0
        ended.sort(key=lambda item: item[0])  # ends of an instant in start order
        return [event for _, event in ended]


class PerOpCompute(_SharedDevice):
    """The plain path of :class:`DeviceCompute`: every running op's work left is
    advanced on its own at every change (O(ops running) each)."""

    def __init__(self, env: simpy.Environment, comm: CommLoad, after_ends: Callable[[], None]) -> None:
        super().__init__(env, comm, after_ends)
        self._ops: dict[int, list] = {}
        """Start order -> [work left (ps at full speed), memory-bound, its event]."""

    def _add(self, order: int, work_ps: float, memory_bound: bool, done: simpy.Event) -> None:
        self._ops[order] = [work_ps, memory_bound, done]

    def _progress(self, dt_ps: int) -> None:
        for entry in self._ops.values():
            entry[0] -= dt_ps * self._rate(entry[1])

    def _soonest(self) -> tuple[int, list[int]]:
        left = {order: max(0, round(work / self._rate(memory_bound)))
                for order, (work, memory_bound, _) in self._ops.items()}
        soonest = min(left.values())
        return soonest, [order for order, t in left.items() if t == soonest]

    def _remove(self, due: list[int]) -> list[simpy.Event]:
        return [self._ops.pop(order)[2] for order in due]
