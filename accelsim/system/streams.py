"""Streams and dependencies: which op of a replayed class starts when.

An op starts when its ``deps`` and ``ctrl_deps`` have finished and the op before it on
its stream has finished (or, if async, been issued); ``done`` waits for its async op.
Where the program has a host timeline (ops' ``host_s``, ``host_sync``), an op also waits
until the host has issued it (:class:`HostQueue`).
Compute ops run on the class's :class:`~accelsim.system.compute.DeviceCompute`;
communication ops join their instances (:class:`~accelsim.system.instances.Rendezvous`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import simpy

from accelsim.system.compute import DeviceCompute
from accelsim.system.costs import CostModel
from accelsim.system.program import CompiledProgram, HostTimes
from accelsim.system.trace import Op
from accelsim.units import seconds_to_ps


@dataclass(frozen=True, kw_only=True)
class Segment:
    """One span on a timeline track (for Perfetto)."""

    track: int
    """Index of the replayed class (see ``ReplayResult.classes``)."""
    lane: str
    """Stream name, or ``comm`` for data moving on links."""
    name: str
    kind: str
    start_ps: int
    end_ps: int


NOT_ISSUED = 1 << 62
"""The issue time of an op the host has not reached (it waits for an earlier op)."""


@dataclass(eq=False)
class HostQueue:
    """The host (CPU) of one replayed class issuing its program's ops in list order: each
    takes its ``host_s`` after the one before, and after an op with ``host_sync`` the host
    issues nothing more until that op has finished. The host runs ahead of the device
    until it waits, so issue times are set in runs, one per sync."""

    times: HostTimes
    issued_ps: list[int] = field(init=False)
    """Per op, when the host has issued it (:data:`NOT_ISSUED` until known)."""
    next: int = 0
    """The first op not issued yet."""
    clock_ps: int = 0
    waking: set[int] = field(default_factory=set)
    """Streams with a wake-up scheduled for their head op's issue."""

    def __post_init__(self) -> None:
        self.issued_ps = [NOT_ISSUED] * len(self.times.issue_ps)

    def issue(self, now_ps: int) -> None:
        """Issue ops from :attr:`next` on, from ``now_ps`` or later, up to and including the
        next one the host waits for."""
        cost, sync, issued = self.times.issue_ps, self.times.sync, self.issued_ps
        t, i = max(self.clock_ps, now_ps), self.next
        while i < len(cost):
            t += cost[i]
            issued[i] = t
            i += 1
            if sync[i - 1]:
                break
        self.next, self.clock_ps = i, t


@dataclass(eq=False)
class DeviceClass:
    """Devices replayed together (one, or interchangeable ones folded), and their
    progress through their program."""

    id: int
    prog: CompiledProgram
    devices: list[int]
    compute: DeviceCompute
    deps_left: list[int] = field(init=False)
    head: list[int] = field(init=False)
    """Per stream, the position of its next op."""
    busy: list[bool] = field(init=False)
    finished: bytearray = field(init=False)
    ops_left: int = field(init=False)
    finish_ps: int = 0
    started_ps: dict[int, int] = field(default_factory=dict)
    pending: dict[int, int] = field(default_factory=dict)
    """Comm op -> instances it still waits for."""
    host: HostQueue | None = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.prog.ops)
        self.host = HostQueue(self.prog.host) if self.prog.host is not None else None
        if self.host is not None:
            self.host.issue(0)
        self.deps_left = list(self.prog.ndeps)
        self.head = [0] * len(self.prog.streams)
        self.busy = [False] * len(self.prog.streams)
        self.finished = bytearray(n)
        self.ops_left = n

    def waiting(self) -> list[int]:
        """Ops started and not finished."""
        return [i for i in range(len(self.prog.ops)) if not self.finished[i] and i in self.started_ps]


class Completions:
    """Ops that are done, whose effects (dependents, streams) run in order from
    :meth:`drain`: no recursion through chains of instant ops."""

    def __init__(self) -> None:
        self._queue: deque[tuple[DeviceClass, int]] = deque()
        self._draining = False
        self.finish: Callable[[DeviceClass, int], None] = lambda cls, i: None
        """Set by :class:`Streams`."""

    def put(self, cls: DeviceClass, i: int) -> None:
        self._queue.append((cls, i))

    def complete(self, cls: DeviceClass, i: int) -> None:
        self.put(cls, i)
        self.drain()

    def drain(self) -> None:
        if self._draining:
            return
        self._draining = True
        try:
            while self._queue:
                self.finish(*self._queue.popleft())
        finally:
            self._draining = False


class Arrivals(Protocol):
    def arrive(self, cls: DeviceClass, i: int, op: Op) -> None: ...


class Streams:
    """Starts each class's ops as streams and dependencies allow, and finishes them."""

    def __init__(self, env: simpy.Environment, costs: CostModel, comm: Arrivals, completions: Completions,
                 segments: list[Segment] | None) -> None:
        """``segments``: where timeline spans go (None: no timeline)."""
        self.env = env
        self.costs = costs
        self.comm = comm
        self.completions = completions
        completions.finish = self._finish
        self.segments = segments

    def start(self, classes: list[DeviceClass]) -> None:
        for cls in classes:
            for s in range(len(cls.prog.streams)):
                self._try_stream(cls, s)
        self.completions.drain()

    def _try_stream(self, cls: DeviceClass, s: int) -> None:
        """Start ops at the head of stream ``s`` while they can start."""
        prog, busy, head, host = cls.prog, cls.busy, cls.head, cls.host
        stream = prog.streams[s]
        while not busy[s] and head[s] < len(stream):
            i = stream[head[s]]
            if cls.deps_left[i]:
                return
            if host is not None and host.issued_ps[i] > self.env.now:
                self._wait_for_host(cls, s, host.issued_ps[i])
                return
            head[s] += 1
            op = prog.ops[i]
            if not op.is_async:
                busy[s] = True
            self._start(cls, i, op)

    def _wait_for_host(self, cls: DeviceClass, s: int, issued_ps: int) -> None:
        """Try stream ``s`` again once the host issues its head op (a sync's end retries
        every stream when the host's next run is not yet known)."""
        host = cls.host
        if issued_ps == NOT_ISSUED or s in host.waking:
            return
        host.waking.add(s)

        def wake(_event: simpy.Event) -> None:
            host.waking.discard(s)
            self._try_stream(cls, s)
            self.completions.drain()

        self.env.timeout(issued_ps - self.env.now).callbacks.append(wake)

    def _start(self, cls: DeviceClass, i: int, op: Op) -> None:
        cls.started_ps[i] = self.env.now
        if op.kind == "compute":
            self._start_compute(cls, i, op)
        elif op.kind == "done":
            self.completions.complete(cls, i)
        else:
            self.comm.arrive(cls, i, op)

    def _start_compute(self, cls: DeviceClass, i: int, op: Op) -> None:
        prog = cls.prog
        cost = prog.costs[i]
        if cost is None:
            cost = prog.costs[i] = self.costs.cost(op, f"programs[{prog.index}].ops[{i}]")
        work_ps = seconds_to_ps(cost.seconds)
        if work_ps <= 0:
            self.completions.complete(cls, i)
            return
        ended = cls.compute.run(work_ps, cost.memory_bound)
        ended.callbacks.append(lambda _e: self.completions.put(cls, i))

    def _finish(self, cls: DeviceClass, i: int) -> None:
        prog = cls.prog
        op = prog.ops[i]
        now = self.env.now
        cls.finished[i] = 1
        cls.ops_left -= 1
        if now > cls.finish_ps:
            cls.finish_ps = now
        if self.segments is not None:
            lane = f"{op.stream} (async)" if op.is_async else op.stream
            self.segments.append(Segment(track=cls.id, lane=lane, name=op.name, kind=op.kind,
                                         start_ps=cls.started_ps[i], end_ps=now))
        s = prog.stream_of[i]
        if not op.is_async:
            cls.busy[s] = False
        touched = None  # other streams whose ops became ready (most ends ready none)
        deps_left = cls.deps_left
        for j in prog.dependents[i]:
            deps_left[j] -= 1
            if not deps_left[j] and prog.stream_of[j] != s:
                touched = touched or set()
                touched.add(prog.stream_of[j])
        if cls.host is not None and cls.host.times.sync[i]:  # the host goes on issuing
            cls.host.issue(now)
            touched = set(range(len(prog.streams)))
        if not touched:
            self._try_stream(cls, s)
            return
        for t in sorted({s, *touched}):
            self._try_stream(cls, t)
