"""Replay of a system trace: one discrete-event run over every device of a system.

Devices run their program's ops as streams do: an op starts when its dependencies have
finished and the op before it on its stream has finished (or, if async, been issued).
Three shared things set how long ops take:

* **compute** on a device is processor-shared: ``k`` compute ops running at once on one
  device each progress at ``1/k`` of their speed alone;
* **links**: every collective and transfer is a plan of flows (``accelsim.network``) on
  one :class:`~accelsim.engine.fluid.FluidResources` pool over all links of the
  topology, so concurrent ones share links max-min fairly;
* **comm vs compute on GPUs**: while a collective or transfer runs on a device, its
  compute ops progress at ``1 - comm_sm_fraction`` of their speed (``1 -`` the running
  collectives' HBM shares for memory-bound ones): NCCL kernels occupy SMs and move
  their bytes through HBM (see :class:`ReplayOptions`).

**Folding.** Devices of one program that are interchangeable (the program has no
send/recv and every collective's groups have one size) are replayed as one *class*
that advances in lockstep, so a 1024-chip SPMD step costs about what one chip does.
Collectives still start one plan per replica group on the shared links (one, when the
groups are translates whose links nothing else loads meanwhile: see
``_Replay._foldable_partitions``); a class's collective ends when its slowest group does
(exact when groups are symmetric).
``fold=False`` replays every device on its own.

Time is the SimPy clock in integer picoseconds; ties break in event order, so a
replay is deterministic.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import simpy

from accelsim.arch import model
from accelsim.arch.model import Arch, Chip, GpuChip
from accelsim.engine.fluid import FluidResources
from accelsim.errors import InputError
from accelsim.network import build_topology, link_loads, links_of, plan_for, play_plan
from accelsim.network.collectives import BUS_FACTORS, Plan, Request, estimate_s
from accelsim.network.topology import Topology
from accelsim.results import DeviceStats, LinkStats, StepResult
from accelsim.system.costs import CostModel, OpCost
from accelsim.system.trace import COLLECTIVE_KINDS, P2P_KINDS, PERMUTE_KIND, Op, Program, SystemTrace, group_index
from accelsim.units import UnitError, parse_quantity, ps_to_seconds, seconds_to_ps

NCCL_CHANNELS_ESTIMATE = 16
"""SMs a running NCCL collective holds on a GPU: one CTA per channel. NCCL picks 2-32
channels by message size and topology; 16 is an estimate for large NVLink transfers,
not fitted (``--comm-sm-fraction`` overrides)."""


@dataclass(frozen=True, kw_only=True)
class ReplayOptions:
    """How to replay. ``None`` fractions take the chip's defaults: on GPUs,
    ``comm_sm_fraction = 16 / SMs`` (:data:`NCCL_CHANNELS_ESTIMATE`) and, per running
    collective, an HBM share of ``2 x its bus bandwidth / HBM bandwidth`` (every byte it
    sends is read from HBM and every byte it receives written back; its bus bandwidth
    from its plan's estimated time alone), summed over the
    collectives running at once and capped at 0.5; ``comm_hbm_fraction`` fixes one share
    for any collective instead. On TPUs both are 0 (ICI DMA engines, no TensorCore
    involved)."""

    fold: bool = True
    algorithm: str = "auto"
    comm_sm_fraction: float | None = None
    comm_hbm_fraction: float | None = None
    timeline: bool = False
    roofline_overhead_s: float = 0.0
    """A fixed cost added to every roofline compute op (kernel-trace and family ops already
    carry the chip's ``launch_overhead``): e.g. the gap between eagerly launched GPU
    kernels. 0 by default, as between kernels of a CUDA graph (no measurement here says
    more; see docs/system-trace-format.md)."""


def parse_roofline_overhead(text: str, source: str) -> float:
    """``--roofline-overhead`` (or a sweep's ``roofline_overhead``): a non-negative time
    with its unit, in seconds; bad text is one located line."""
    try:
        value = parse_quantity(text, "seconds")
    except UnitError as exc:
        raise InputError(str(exc), source=source) from None
    if value < 0:
        raise InputError(f"expected a non-negative time, got {text!r}", source=source)
    return value


def comm_fractions(chip: Chip, options: ReplayOptions) -> tuple[float, float | None]:
    """(SM share, HBM share) collectives take from compute; the HBM share is ``None`` where
    each collective takes its own (:meth:`_Replay._hbm_share`: GPUs without
    ``--comm-hbm-fraction``)."""
    if isinstance(chip, GpuChip):
        sm = min(1.0, NCCL_CHANNELS_ESTIMATE / chip.num_cores)
        hbm = None
    else:
        sm = hbm = 0.0
    sm = sm if options.comm_sm_fraction is None else options.comm_sm_fraction
    hbm = hbm if options.comm_hbm_fraction is None else options.comm_hbm_fraction
    for name, value in (("comm_sm_fraction", sm), ("comm_hbm_fraction", hbm)):
        if value is not None and not 0.0 <= value < 1.0:
            raise InputError(f"expected a fraction in [0, 1), got {value!r}", source=f"--{name.replace('_', '-')}")
    return sm, hbm


HBM_SHARE_CAP = 0.5
"""The most of a GPU's HBM bandwidth collectives take from compute together (the rest
stays with the compute kernels, as the memory controllers interleave them)."""


# ------------------------------------------------------------------ results


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


@dataclass(frozen=True, kw_only=True)
class ReplayResult:
    trace: str
    system: str
    step_time_s: float
    devices: tuple[DeviceStats, ...]
    links: tuple[LinkStats, ...]
    classes: tuple[tuple[str, tuple[int, ...]], ...]
    """(program name, devices) of every replayed class: folded devices share one."""
    ops: int
    """Ops over every device (an SPMD op counts once per device)."""
    comm_instances: int
    """Collective and transfer instances played on the links."""
    comm_groups_folded: int
    """Replica groups not played because a folded class played a translate of them."""
    kernels_simulated: int
    events: int
    sim_wall_s: float
    segments: tuple[Segment, ...] = ()
    link_counters: tuple[tuple[int, float, float, float], ...] = ()
    """After every reallocation, with a timeline: (time ps, bytes/s over all links, over the
    scale-out links (NICs, DCN), the busiest link's share of its bandwidth)."""

    def result(self) -> StepResult:
        """What the replay found, in the shared results schema."""
        return StepResult(
            trace=self.trace, system=self.system, step_time_s=self.step_time_s, devices=self.devices,
            links=self.links, replayed_classes=len(self.classes), ops=self.ops, comm_instances=self.comm_instances,
            comm_groups_folded=self.comm_groups_folded, kernels_simulated=self.kernels_simulated,
            events=self.events, sim_wall_s=self.sim_wall_s,
        )

    def summary(self) -> dict:
        """The ``--json`` form of :meth:`result` (stable keys, docs/replay.md)."""
        return self.result().to_json()


# ------------------------------------------------------------------ compiled programs


@dataclass
class _Compiled:
    """A program's ops as index arrays, shared by every class that runs it."""

    index: int
    program: Program
    devices: list[int]
    streams: list[list[int]]
    stream_of: list[int]
    dependents: list[list[int]]
    ndeps: list[int]
    costs: list[OpCost | None]
    comm_keys: list[dict[int, tuple] | None]
    """Per comm op: device -> (instance key, ranks); see :func:`_comm_keys`."""
    foldable: bool


def _compile(p: int, program: Program, indexes: dict[tuple, dict]) -> _Compiled:
    ops = program.ops
    index = {op.name: i for i, op in enumerate(ops)}
    stream_ids: dict[str, int] = {}
    streams: list[list[int]] = []
    stream_of = []
    dependents: list[list[int]] = [[] for _ in ops]
    ndeps = []
    for i, op in enumerate(ops):
        s = stream_ids.setdefault(op.stream, len(stream_ids))
        if s == len(streams):
            streams.append([])
        streams[s].append(i)
        stream_of.append(s)
        before = {index[d] for d in (*op.deps, *op.ctrl_deps)}
        if op.kind == "done":
            before.add(index[op.start])
        for b in before:
            dependents[b].append(i)
        ndeps.append(len(before))
    devices = program.device_ids()
    return _Compiled(
        index=p, program=program, devices=devices, streams=streams, stream_of=stream_of,
        dependents=dependents, ndeps=ndeps, costs=[None] * len(ops), comm_keys=_comm_keys(program, devices, indexes),
        foldable=_foldable(program),
    )


def _foldable(program: Program) -> bool:
    """Devices are interchangeable: no send/recv (chains have ends) and every
    collective's replica groups have one size."""
    for op in program.ops:
        if op.kind in P2P_KINDS:
            return False
        if op.kind in COLLECTIVE_KINDS and op.groups is not None and len({len(g) for g in op.groups}) > 1:
            return False
    return True


def _comm_keys(program: Program, devices: list[int], indexes: dict[tuple, dict]) -> list[dict[int, tuple] | None]:
    """Per comm op, ``device -> (instance key, ranks)`` for the program's devices: which
    instance each joins. The n-th op a device issues on one group and communicator (or
    one pair set, or one src->dst pair and tag) is the n-th instance there. ``indexes`` caches
    :func:`group_index` across programs that repeat the same groups."""
    counters: dict[tuple, int] = {}
    out: list[dict[int, tuple] | None] = []
    layouts: dict[tuple, tuple[list[tuple], list[int]]] = {}
    for op in program.ops:
        if op.kind in COLLECTIVE_KINDS:
            groups = tuple(map(tuple, op.groups)) if op.groups is not None else (tuple(sorted(devices)),)
            if groups not in layouts:
                if groups not in indexes:
                    indexes[groups] = group_index(groups)
                layouts[groups] = _group_layout(indexes[groups], devices)
            order, slots = layouts[groups]
            joins = []
            for group in order:  # in the order the program's devices first meet them
                base = ("coll", group, op.communicator)
                seq = counters.get(base, 0)
                counters[base] = seq + 1
                joins.append(((base, seq), group))
            out.append(dict(zip(devices, map(joins.__getitem__, slots))))
        elif op.kind == PERMUTE_KIND:
            pairs = tuple(sorted((s, t) for s, t in op.pairs))
            base = ("perm", pairs)
            seq = counters.get(base, 0)
            counters[base] = seq + 1
            ranks = tuple(sorted({d for pair in pairs for d in pair}))
            out.append({d: ((base, seq), ranks) for d in ranks})
        elif op.kind in P2P_KINDS:
            keys = {}
            for d in devices:
                peer = op.peer if op.peer is not None else d + op.peer_offset
                src, dst = (d, peer) if op.kind == "send" else (peer, d)
                side = (op.kind, src, dst, op.tag)  # counted per side: d may also be the other end of (src, dst)
                seq = counters.get(side, 0)
                counters[side] = seq + 1
                keys[d] = ((("p2p", src, dst, op.tag), seq), (src, dst))
            out.append(keys)
        else:
            out.append(None)
    return out


def _group_layout(index: dict[int, tuple], devices: list[int]) -> tuple[list[tuple], list[int]]:
    """The distinct groups the devices join, in the order the devices first meet them,
    and each device's position in that list (what every op on these groups shares)."""
    order: list[tuple] = []
    slot_of: dict[int, int] = {}
    slots = []
    for d in devices:
        group = index[d]
        slot = slot_of.get(id(group))  # id: hashing a 1024-rank tuple per device is slow
        if slot is None:
            slot = slot_of[id(group)] = len(order)
            order.append(group)
        slots.append(slot)
    return order, slots


def _finished_before(prog: _Compiled) -> list[int]:
    """Per op, the ops that have finished whenever it starts, as a bit set: its
    dependencies (and a done's async op), the op before it on its stream unless that one
    is async (an async op frees its stream when issued), and theirs in turn."""
    ops = prog.program.ops
    parents: list[list[int]] = [[] for _ in ops]
    for k, children in enumerate(prog.dependents):
        for j in children:
            parents[j].append(k)
    for stream in prog.streams:
        for k, j in zip(stream, stream[1:]):
            if not ops[k].is_async:
                parents[j].append(k)
    order = _topological(parents)
    before = [0] * len(ops)
    for j in order:
        bits = 0
        for k in parents[j]:
            bits |= before[k] | (1 << k)
        before[j] = bits
    return before


def _topological(parents: list[list[int]]) -> list[int]:
    """Ops in an order where each comes after its parents (the trace has no cycles: they
    are refused before the replay)."""
    children: list[list[int]] = [[] for _ in parents]
    waiting = [len(p) for p in parents]
    for j, ps in enumerate(parents):
        for k in ps:
            children[k].append(j)
    ready = deque(j for j, n in enumerate(waiting) if n == 0)
    order = []
    while ready:
        k = ready.popleft()
        order.append(k)
        for j in children[k]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    return order


# ------------------------------------------------------------------ the run


class _CountingEnv(simpy.Environment):
    """A SimPy environment that counts the events it processes."""

    def __init__(self) -> None:
        super().__init__()
        self.processed = 0

    def step(self) -> None:
        self.processed += 1
        super().step()


@dataclass
class _Class:
    """Devices replayed together, and their progress through their program."""

    id: int
    prog: _Compiled
    devices: list[int]
    deps_left: list[int]
    head: list[int]
    busy: list[bool]
    finished: bytearray
    pending: dict[int, int] = field(default_factory=dict)
    running: dict[int, list[float]] = field(default_factory=dict)
    """Compute op -> [work left in ps at full speed, 1.0 if memory-bound else 0.0]."""
    comm_active: int = 0
    comm_hbm_share: float = 0.0
    """Sum of the HBM shares of the collectives running on the class (:meth:`_Replay._hbm_share`)."""
    compute_last_ps: int = 0
    timer_generation: int = 0
    ops_left: int = 0
    finish_ps: int = 0
    # time accounting: only compute, only comm, both
    acct_last_ps: int = 0
    compute_only_ps: int = 0
    comm_only_ps: int = 0
    both_ps: int = 0
    started_ps: dict[int, int] = field(default_factory=dict)


@dataclass
class _Instance:
    """One collective (or transfer) instance: who must arrive, who has."""

    key: tuple
    kind: str
    bytes: float
    ranks: tuple[int, ...]
    expected: int
    first: tuple[int, int, int]
    """(device, class, op) of the first arrival: for error messages."""
    arrived: int = 0
    members: list[tuple[int, int]] = field(default_factory=list)
    """(class, op) that wait for it."""
    started_ps: int = 0
    hbm_share: float = 0.0


class _Replay:
    def __init__(self, trace: SystemTrace, system: Arch, base_dir: Path, options: ReplayOptions,
                 costs: CostModel | None = None) -> None:
        self.trace = trace
        self.options = options
        self.topo: Topology = build_topology(system)
        self.chip: Chip = chip_of(system)
        check_devices(trace, system)
        self.sm_fraction, self.hbm_fraction = comm_fractions(self.chip, options)
        self.hbm_shares: dict[int, float] = {}
        """id(plan) -> the HBM share its collective takes (:meth:`_hbm_share`)."""
        if costs is not None and (costs.chip != self.chip or costs.base_dir != base_dir
                                  or costs.roofline_overhead_s != options.roofline_overhead_s):
            raise ValueError("a shared CostModel must be for the system's chip, the trace's base_dir and the "
                             "options' roofline overhead")
        self.costs = costs or CostModel(self.chip, base_dir, options.roofline_overhead_s)
        self.kernels_before = self.costs.kernels_simulated
        self.env = _CountingEnv()
        self.classes: list[_Class] = []
        indexes: dict[tuple, dict] = {}
        for p, program in enumerate(trace.programs):
            prog = _compile(p, program, indexes)
            groups = [prog.devices] if options.fold and prog.foldable else [[d] for d in prog.devices]
            for devices in groups:
                self._add_class(prog, devices)
        self.instances: dict[tuple, _Instance] = {}
        self.plans: dict[tuple, Plan | None] = {}
        self.whole_keys: set[tuple] = set()
        self.group_numbers: dict[tuple, int] = {}
        self.group_ids: dict[int, tuple[tuple, int]] = {}
        """id(group) -> (group, its number in group_numbers); holds the group, so the id stays its."""
        """Plan keys (kind, bytes, ranks) played with every part (:meth:`_choose_whole`)."""
        self.independent: dict[tuple, tuple[bool, list]] = {}
        """(kind, bytes, partition) -> whether the groups' plans are translates, and the links
        they share with other traffic (_foldable_partitions)."""
        self.plan_links: dict[int, frozenset[str]] = {}
        self.finished_before: dict[int, list[int]] = {}
        """Per program: per op, a bit set of the ops that finish before it starts."""
        self.folded_plans: list[Plan | None] = []
        """Plans of groups a folded class did not play (translates of one it played)."""
        self.comm_instances = 0
        self.completed: deque[tuple[_Class, int]] = deque()
        self.draining = False
        self.segments: list[Segment] = []
        self.joined: dict[tuple[int, int], dict[tuple, list]] = {}
        used = self._plan_everything()
        # one pool for every link any collective of the trace crosses (the others would only
        # add columns to every reallocation)
        # many groups' phases start at the same instants: one reallocation for each instant
        self.pool = FluidResources(self.env, {n: self.topo.links[n].bandwidth_bytes_per_s for n in sorted(used)},
                                   coalesce_starts=True)
        self.link_counters: list[tuple[int, float, float, float]] = []
        if options.timeline:
            names = sorted(used)
            capacity = np.array([self.topo.links[n].bandwidth_bytes_per_s for n in names])
            scale_out = np.array([self.topo.links[n].scale_out for n in names])

            def observe(now: int, pool: FluidResources) -> None:
                load = np.fromiter(pool.rates().values(), float, len(names))  # the pool's order: sorted(used)
                self.link_counters.append((now, float(load.sum()), float(load[scale_out].sum()),
                                           float((load / capacity).max(initial=0.0))))

            self.pool.observer = observe

    def _add_class(self, prog: _Compiled, devices: list[int]) -> None:
        n = len(prog.program.ops)
        cls = _Class(
            id=len(self.classes), prog=prog, devices=devices, deps_left=list(prog.ndeps),
            head=[0] * len(prog.streams), busy=[False] * len(prog.streams), finished=bytearray(n), ops_left=n,
        )
        self.classes.append(cls)

    # -------------------------------------------------------------- driving

    def run(self) -> None:
        for cls in self.classes:
            for s in range(len(cls.prog.streams)):
                self._try_stream(cls, s)
        self._drain()
        self.env.run()
        self._check_finished()

    def _try_stream(self, cls: _Class, s: int) -> None:
        """Start ops at the head of stream ``s`` while they can start."""
        stream = cls.prog.streams[s]
        while not cls.busy[s] and cls.head[s] < len(stream):
            i = stream[cls.head[s]]
            if cls.deps_left[i]:
                return
            cls.head[s] += 1
            op = cls.prog.program.ops[i]
            if not op.is_async:
                cls.busy[s] = True
            self._start(cls, i, op)

    def _start(self, cls: _Class, i: int, op: Op) -> None:
        cls.started_ps[i] = self.env.now
        if op.kind == "compute":
            self._start_compute(cls, i)
        elif op.kind == "done":
            self._complete(cls, i)
        else:
            self._arrive(cls, i, op)

    def _complete(self, cls: _Class, i: int) -> None:
        """Op ``i`` of ``cls`` is done; its effects run from :meth:`_drain` (no recursion
        through chains of instant ops)."""
        self.completed.append((cls, i))
        self._drain()

    def _drain(self) -> None:
        if self.draining:
            return
        self.draining = True
        try:
            while self.completed:
                cls, i = self.completed.popleft()
                self._finish(cls, i)
        finally:
            self.draining = False

    def _finish(self, cls: _Class, i: int) -> None:
        prog = cls.prog
        op = prog.program.ops[i]
        now = self.env.now
        cls.finished[i] = 1
        cls.ops_left -= 1
        cls.finish_ps = max(cls.finish_ps, now)
        if self.options.timeline:
            lane = f"{op.stream} (async)" if op.is_async else op.stream
            self.segments.append(Segment(track=cls.id, lane=lane, name=op.name, kind=op.kind,
                                         start_ps=cls.started_ps[i], end_ps=now))
        s = prog.stream_of[i]
        if not op.is_async:
            cls.busy[s] = False
        touched = {s}
        for j in prog.dependents[i]:
            cls.deps_left[j] -= 1
            if not cls.deps_left[j]:
                touched.add(prog.stream_of[j])
        for t in sorted(touched):
            self._try_stream(cls, t)

    def _check_finished(self) -> None:
        for cls in self.classes:
            if cls.ops_left:
                message, i = self._stall_message(cls)
                where = f"programs[{cls.prog.index}]" + (f".ops[{i}]" if i is not None else "")
                raise InputError(message, field=where)

    def _waiting(self, cls: _Class) -> list[int]:
        ops = cls.prog.program.ops
        return [i for i in range(len(ops)) if not cls.finished[i] and i in cls.started_ps]

    def _stall_message(self, cls: _Class) -> tuple[str, int | None]:
        """Why ``cls`` cannot finish, and the op it is stuck at."""
        ops = cls.prog.program.ops
        waiting = self._waiting(cls)
        device = cls.devices[0]
        if not waiting:
            return f"replay stalled: device {device} never started op {ops[cls.finished.index(0)].name!r}", None
        i = waiting[0]
        for inst in self.instances.values():
            if (cls.id, i) in inst.members:
                arrived = {d for c, _ in inst.members for d in self.classes[c].devices}
                missing = [d for d in inst.ranks if d not in arrived]
                return (f"replay stalled: device {device} waits in {ops[i].kind} {ops[i].name!r} on ranks "
                        f"{_ranks_text(inst.ranks)} for device {missing[0]}, {self._doing(missing[0])} (ops on a "
                        f"group must be issued in the same order by every member, on the same groups)"), i
        return f"replay stalled: device {device} waits in op {ops[i].name!r}", i

    def _doing(self, device: int) -> str:
        """What a device that did not join a collective is doing instead."""
        for cls in self.classes:
            if device in cls.devices:
                for j in self._waiting(cls):
                    for inst in self.instances.values():
                        if (cls.id, j) in inst.members:
                            op = cls.prog.program.ops[j]
                            return (f"which waits in {op.kind} {op.name!r} on ranks {_ranks_text(inst.ranks)} "
                                    f"(programs[{cls.prog.index}].ops[{j}])")
        return "which never reached the matching op"

    # -------------------------------------------------------------- compute

    def _start_compute(self, cls: _Class, i: int) -> None:
        prog = cls.prog
        if prog.costs[i] is None:
            prog.costs[i] = self.costs.cost(prog.program.ops[i], f"programs[{prog.index}].ops[{i}]")
        cost = prog.costs[i]
        work_ps = seconds_to_ps(cost.seconds)
        if work_ps <= 0:
            self._complete(cls, i)
            return
        self._advance_compute(cls)
        cls.running[i] = [float(work_ps), 1.0 if cost.memory_bound else 0.0]
        self._reschedule_compute(cls)

    def _rate(self, cls: _Class, memory_bound: float) -> float:
        if not cls.comm_active:
            slow = 0.0
        elif not memory_bound:
            slow = self.sm_fraction
        elif self.hbm_fraction is not None:
            slow = self.hbm_fraction
        else:
            slow = min(HBM_SHARE_CAP, cls.comm_hbm_share)
        return (1.0 - slow) / len(cls.running)

    def _advance_compute(self, cls: _Class) -> None:
        """Move running compute ops' progress to now (and the time accounts)."""
        now = self.env.now
        dt = now - cls.compute_last_ps
        cls.compute_last_ps = now
        if dt and cls.running:
            for entry in cls.running.values():
                entry[0] -= dt * self._rate(cls, entry[1])
        self._account(cls)

    def _account(self, cls: _Class) -> None:
        now = self.env.now
        dt = now - cls.acct_last_ps
        cls.acct_last_ps = now
        if not dt:
            return
        if cls.running and cls.comm_active:
            cls.both_ps += dt
        elif cls.running:
            cls.compute_only_ps += dt
        elif cls.comm_active:
            cls.comm_only_ps += dt

    def _reschedule_compute(self, cls: _Class) -> None:
        cls.timer_generation += 1
        if not cls.running:
            return
        left = {i: max(0, round(w / self._rate(cls, f))) for i, (w, f) in cls.running.items()}
        soonest = min(left.values())
        due = [i for i, t in left.items() if t == soonest]
        generation = cls.timer_generation
        timer = self.env.timeout(soonest)
        timer.callbacks.append(lambda _e: self._on_compute_timer(cls, generation, due))

    def _on_compute_timer(self, cls: _Class, generation: int, due: list[int]) -> None:
        if generation != cls.timer_generation:
            return
        self._advance_compute(cls)
        for i in due:
            del cls.running[i]
        self._reschedule_compute(cls)
        for i in due:
            self.completed.append((cls, i))
        self._drain()

    def _set_comm(self, cls: _Class, delta: int, hbm_share: float = 0.0) -> None:
        self._advance_compute(cls)
        before = (bool(cls.comm_active), cls.comm_hbm_share)
        cls.comm_active += delta
        cls.comm_hbm_share = cls.comm_hbm_share + delta * hbm_share if cls.comm_active else 0.0
        if (bool(cls.comm_active), cls.comm_hbm_share) != before and cls.running:
            self._reschedule_compute(cls)

    def _hbm_share(self, inst: _Instance, plan: Plan) -> float:
        """The share of a GPU's HBM bandwidth a collective takes while it runs: every byte
        it sends is read from HBM and every byte it receives written back, so twice its
        bus bandwidth (nccl-tests' busbw, the bytes each rank moves per second) with the
        plan's estimated time alone (``estimate_s``). Its own rate, not the links' peak: a
        NIC-bound collective takes what the NIC moves, and a faster one takes more for
        less time, the same bytes (the links' peak made faster NVLink slow memory-bound
        compute beside a NIC-bound collective)."""
        key = id(plan)
        share = self.hbm_shares.get(key)
        if share is None:
            kind = "send-recv" if inst.kind == "send/recv" else inst.kind
            factor = BUS_FACTORS[kind](len(inst.ranks))
            busbw = factor * inst.bytes / estimate_s(self.topo, plan)
            share = self.hbm_shares[key] = 2 * busbw / self.chip.hbm.bandwidth_bytes_per_s
        return share

    # -------------------------------------------------------------- communication

    def _arrive(self, cls: _Class, i: int, op: Op) -> None:
        joined = self.joined[cls.id, i]
        if not joined:
            self._complete(cls, i)  # no device of this class takes part (a permute that skips it)
            return
        cls.pending[i] = len(joined)
        for key, (ranks, count) in joined.items():
            inst = self.instances.get(key)
            if inst is None:
                inst = _Instance(key=key, kind=_instance_kind(op),
                                 bytes=op.bytes, ranks=ranks, expected=len(ranks), first=(cls.devices[0], cls.id, i))
                self.instances[key] = inst
            else:
                self._check_match(inst, cls, i, op)
            inst.arrived += count
            inst.members.append((cls.id, i))
            if inst.arrived == inst.expected:
                self._launch(inst)

    def _plan_everything(self) -> set[str]:
        """Before the run: which instances each class's comm ops join, their plans, and the
        links those cross. Bad groups fail here, before any time is simulated. A folded
        class then plays one group of an op where that is exact (:meth:`_foldable_partitions`)."""
        full: dict[tuple[int, int], dict[tuple, list]] = {}
        for cls in self.classes:
            for i, op in enumerate(cls.prog.program.ops):
                if op.is_comm:
                    full[cls.id, i] = self._instances_joined(cls, i, op)
        owners = self._link_owners(full)
        self._choose_whole(full, owners)
        foldable = self._foldable_partitions(full, owners)
        used: set[str] = set()
        counted: set[int] = set()  # plans are cached: each distinct one once
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.program.ops[i]
            if self._whole_groups(op, joined) in foldable:
                key = cls.prog.comm_keys[i][cls.devices[0]][0]
                for (base, seq), (ranks, _count) in joined.items():
                    if (base, seq) != key:
                        self.folded_plans.append(self._plan_of(op.kind, op.bytes, ranks, base, (cls.prog.index, i)))
                joined = {key: joined[key]}
            self.joined[c, i] = joined
            for (base, _seq), (ranks, _count) in joined.items():
                plan = self._plan_of(_instance_kind(op), op.bytes, ranks, base, (cls.prog.index, i))
                if plan is not None and id(plan) not in counted:
                    counted.add(id(plan))
                    used |= self._links(plan)
        return used

    def _instances_joined(self, cls: _Class, i: int, op: Op) -> dict[tuple, list]:
        """Instance key -> [ranks, devices of ``cls`` that join it]."""
        keys = cls.prog.comm_keys[i]
        joined: dict[tuple, list] = {}
        if op.kind in COLLECTIVE_KINDS:
            # a group's devices share one (key, ranks) object (_comm_keys): count them by
            # identity, in C, rather than hash a long ranks tuple per device
            found = [v for v in map(keys.get, cls.devices) if v is not None]
            ids = list(map(id, found))
            by_id = dict(zip(ids, found))
            for ident, count in Counter(ids).items():  # in first-seen order
                key, ranks = by_id[ident]
                joined[key] = [ranks, count]
        else:
            for d in cls.devices:
                if d in keys:
                    key, ranks = keys[d]
                    joined.setdefault(key, [ranks, 0])[1] += 1
        return joined

    @staticmethod
    def _whole_groups(op: Op, joined: dict[tuple, list]) -> frozenset | None:
        """The op's groups (its partition) when it is a collective whose several groups all
        lie inside the class, else None."""
        if op.kind not in COLLECTIVE_KINDS or len(joined) < 2 or any(count != len(ranks)
                                                                     for ranks, count in joined.values()):
            return None
        return frozenset(ranks for ranks, _ in joined.values())

    def _links(self, plan: Plan) -> frozenset[str]:
        found = self.plan_links.get(id(plan))
        if found is None:
            found = self.plan_links[id(plan)] = frozenset(links_of(plan))
        return found

    def _link_owners(self, full: dict[tuple[int, int], dict[tuple, list]]) -> dict[str, dict[tuple, list]]:
        """Per link, what crosses it: ``{(partition, ranks): [tags, ...]}``, where partition
        is the op's groups when they all lie in its class (else None) and a tag is (class,
        op) for a class of several devices, None for one of a single device. Ops with the
        same plan and owner share one list of tags, entered once per link."""
        owners: dict[str, dict[tuple, list]] = {}
        tags_of: dict[tuple, list] = {}
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.program.ops[i]
            partition = self._whole_groups(op, joined)
            tag = (c, i) if len(cls.devices) > 1 else None
            for (base, _seq), (ranks, _count) in joined.items():
                plan = self._reach(_instance_kind(op), op.bytes, ranks, base, (cls.prog.index, i))
                if plan is None:
                    continue
                owner = (partition, ranks)
                tags = tags_of.get((id(plan), owner))
                if tags is None:
                    tags = tags_of[id(plan), owner] = []
                    for link in self._links(plan):
                        owners.setdefault(link, {}).setdefault(owner, []).append(tags)
                if not tags or tags[-1] != tag:
                    tags.append(tag)
        return owners

    def _choose_whole(self, full: dict[tuple[int, int], dict[tuple, list]],
                      owners: dict[str, dict[tuple, list]]) -> None:
        """Which instances play every part of their collective (:attr:`whole_keys`): those
        whose plan simulates one representative part (``Plan.partial``) while other traffic
        that can run at the same time crosses the links of the whole collective. A
        representative part is exact only when nothing else meets the parts it stands for."""
        crowded: dict[tuple, list] = {}
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.program.ops[i]
            kind, where = _instance_kind(op), (cls.prog.index, i)
            partition = self._whole_groups(op, joined)
            for (base, _seq), (ranks, _count) in joined.items():
                part = self._plan_of(kind, op.bytes, ranks, base, where, whole=False)
                if part is None or not part.partial:
                    continue
                key = self._plan_key(kind, op.bytes, ranks, base)
                if key in self.whole_keys:
                    continue
                own = (partition, ranks)
                reach = self._reach(kind, op.bytes, ranks, base, where)
                shared = crowded.get((id(reach), own))
                if shared is None:  # the links something else crosses too, once per plan and owner
                    shared = crowded[id(reach), own] = [owners[link] for link in self._links(reach)
                                                        if len(owners[link]) > 1]
                if any(self._contended(cls, i, on_link, own) for on_link in shared):
                    self.whole_keys.add(key)

    def _foldable_partitions(self, full: dict[tuple[int, int], dict[tuple, list]],
                             owners: dict[str, dict[tuple, list]]) -> set[frozenset]:
        """The partitions (sets of groups) on which a folded class may play only its first
        device's group. Exactly when, for every collective on those groups, the groups'
        plans are translates of one another (the same flows, latencies and link capacities,
        links renamed) and every link they cross carries, while the op runs, nothing but
        that group's traffic of collectives on these same groups: then every group runs as
        the played one does. Traffic of another op of the same class that finishes before
        this one starts, or starts after it ends (the dependencies say so), does not count.
        Otherwise every group is played."""
        ok: dict[frozenset, bool] = {}
        for (c, i), joined in full.items():
            cls = self.classes[c]
            op = cls.prog.program.ops[i]
            partition = self._whole_groups(op, joined)
            if partition is None or ok.get(partition) is False:
                continue
            key = (op.kind, op.bytes, partition)
            if key not in self.independent:
                where = (cls.prog.index, i)
                plans = [(ranks, self._plan_of(op.kind, op.bytes, ranks, base, where, whole=False),
                          self._reach(op.kind, op.bytes, ranks, base, where))
                         for (base, _seq), (ranks, _count) in joined.items()]
                translates = len({None if plan is None else self._shape(plan) for _, plan, _ in plans}) == 1
                # the links something else crosses too (every link carries the op itself)
                shared = [(owners[link], (partition, ranks)) for ranks, _, reach in plans if reach is not None
                          for link in self._links(reach) if len(owners[link]) > 1]
                self.independent[key] = (translates, shared)
            translates, shared = self.independent[key]
            ok[partition] = translates and not any(self._contended(cls, i, on_link, own) for on_link, own in shared)
        return {partition for partition, fine in ok.items() if fine}

    def _contended(self, cls: _Class, i: int, on_link: dict[tuple, list], own: tuple) -> bool:
        """Can traffic other than ``own``'s on a link run while op ``i`` of ``cls`` does?"""
        for owner, tag_lists in on_link.items():
            if owner == own:
                continue
            for tags in tag_lists:
                for tag in tags:
                    if tag is None or tag[0] != cls.id or not self._ordered(cls.prog, i, tag[1]):
                        return True
        return False

    def _ordered(self, prog: _Compiled, i: int, j: int) -> bool:
        """Does one of ops ``i``, ``j`` finish before the other starts, whatever the timing?"""
        before = self.finished_before.get(prog.index)
        if before is None:
            before = self.finished_before[prog.index] = _finished_before(prog)
        return bool(before[j] >> i & 1 or before[i] >> j & 1)

    def _shape(self, plan: Plan) -> tuple:
        """A plan with its links renamed by first use: equal for plans that run the same."""
        names: dict[str, int] = {}
        lanes = tuple(
            tuple((phase.latency_s, tuple((t.bytes, t.efficiency, t.max_bytes_per_s,
                                           tuple(names.setdefault(link, len(names)) for link in t.links))
                                          for t in phase.transfers))
                  for phase in lane)
            for lane in plan.lanes)
        capacities = tuple(self.topo.links[link].bandwidth_bytes_per_s for link in names)
        return plan.algorithm, plan.protocol, plan.launch_s, lanes, capacities

    def _check_match(self, inst: _Instance, cls: _Class, i: int, op: Op) -> None:
        kind = _instance_kind(op)
        if kind != inst.kind or op.bytes != inst.bytes:
            device, c, j = inst.first
            other = self.classes[c].prog
            raise InputError(
                f"{kind} {op.name!r} of {op.bytes:g} bytes on device {cls.devices[0]} meets {inst.kind} "
                f"{other.program.ops[j].name!r} of {inst.bytes:g} bytes on device {device} "
                f"(programs[{other.index}].ops[{j}]); members must issue the same ops on a group in the same order",
                field=f"programs[{cls.prog.index}].ops[{i}]",
            )

    def _launch(self, inst: _Instance) -> None:
        self.comm_instances += 1
        plan = self._plan(inst)
        if plan is None:
            self._instance_done(inst)
            return
        inst.started_ps = self.env.now
        inst.hbm_share = self._hbm_share(inst, plan) if isinstance(self.chip, GpuChip) else 0.0
        for c in sorted({c for c, _ in inst.members}):
            self._set_comm(self.classes[c], +1, inst.hbm_share)
        process = play_plan(self.env, self.pool, plan)
        process.callbacks.append(lambda _e: self._instance_done(inst, communicated=True))

    def _instance_done(self, inst: _Instance, communicated: bool = False) -> None:
        del self.instances[inst.key]
        classes = sorted({c for c, _ in inst.members})
        if communicated:
            for c in classes:
                self._set_comm(self.classes[c], -1, inst.hbm_share)
            if self.options.timeline:
                name = f"{inst.kind} {inst.bytes:g} B over {len(inst.ranks)}"
                for c in classes:
                    self.segments.append(Segment(track=c, lane="comm", name=name, kind=inst.kind,
                                                 start_ps=inst.started_ps, end_ps=self.env.now))
        for c, i in inst.members:
            cls = self.classes[c]
            cls.pending[i] -= 1
            if not cls.pending[i]:
                del cls.pending[i]
                self.completed.append((cls, i))
        self._drain()

    def _plan(self, inst: _Instance) -> Plan | None:
        device, c, j = inst.first
        return self._plan_of(inst.kind, inst.bytes, inst.ranks, inst.key[0], (self.classes[c].prog.index, j))

    def _plan_of(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
                 where: tuple[int, int], whole: bool | None = None) -> Plan | None:
        """The plan of an instance (cached by kind, size and ranks); ``None`` when nothing
        moves (zero bytes, a group of one). ``where`` is (program, op) for errors.
        ``whole``: every part of the collective (True), the plan's own choice of one
        representative part where it has identical ones (False), or as the replay plays
        it (None: every part where other traffic meets another part, see
        :meth:`_choose_whole`)."""
        if nbytes <= 0 or len(ranks) < 2:
            return None
        cache_key = self._plan_key(kind, nbytes, ranks, base)
        if whole is None:
            whole = cache_key in self.whole_keys
        key = (*cache_key, whole)
        if key not in self.plans:
            part = None if not whole else self._plan_of(kind, nbytes, ranks, base, where, whole=False)
            self.plans[key] = part if part is not None and not part.partial else \
                self._make_plan(kind, nbytes, ranks, base, where, whole)
        return self.plans[key]

    def _plan_key(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple) -> tuple:
        """What an instance's plan depends on: kind, size and ranks (a permute's pairs),
        the last as a small number. The same group is one tuple object wherever it is
        named (``_comm_keys``), so it is found by identity: a long tuple is hashed anew at
        every lookup, and a 1024-rank group's plan is looked up for every device."""
        group = base[1] if base[0] == "perm" else ranks
        known = self.group_ids.get(id(group))
        if known is None or known[0] is not group:
            number = self.group_numbers.setdefault(group, len(self.group_numbers))
            known = self.group_ids[id(group)] = (group, number)
        return kind, nbytes, known[1]

    def _reach(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
               where: tuple[int, int]) -> Plan | None:
        """The plan of every part of an instance: the links its traffic crosses in truth."""
        return self._plan_of(kind, nbytes, ranks, base, where, whole=True)

    def _make_plan(self, kind: str, nbytes: float, ranks: tuple[int, ...], base: tuple,
                   where: tuple[int, int], whole: bool = False) -> Plan:
        """Every instance is planned by :mod:`accelsim.network`: a collective over its
        group (with ``--algorithm``), a send/recv pair as ``send-recv``, a permute with its
        pairs (both with the network's own choice of algorithm)."""
        algorithm = self.options.algorithm
        if base[0] == "p2p":
            request, algorithm = Request(kind="send-recv", size_bytes=float(nbytes), ranks=ranks), "auto"
        elif base[0] == "perm":
            request = Request(kind=PERMUTE_KIND, size_bytes=float(nbytes), ranks=ranks, pairs=base[1])
            algorithm = "auto"
        else:
            request = Request(kind=kind, size_bytes=float(nbytes), ranks=ranks, whole=whole)
        try:
            return plan_for(self.topo, request, algorithm)
        except InputError as exc:
            raise InputError(f"{exc.message} (ranks {_ranks_text(ranks)} on {self.topo.name})",
                             field=f"programs[{where[0]}].ops[{where[1]}]") from None

    # -------------------------------------------------------------- results

    def result(self, wall_s: float) -> ReplayResult:
        step_ps = max(cls.finish_ps for cls in self.classes)
        devices = []
        for cls in self.classes:
            stats = self._stats(cls, step_ps)
            devices.extend(DeviceStats(device=d, **stats) for d in cls.devices)
        devices.sort(key=lambda s: s.device)
        step_s = ps_to_seconds(step_ps)
        used = self.pool.used
        # Folded groups' links carried what their played translate's did; a plan (cached
        # per kind, size and group) recurs once per layer, so its loads are summed once.
        repeats: dict[int, list] = {}
        for plan in self.folded_plans:
            repeats.setdefault(id(plan), [plan, 0])[1] += 1
        for plan, times in repeats.values():
            for link, load in link_loads(plan).items():
                used[link] = used.get(link, 0.0) + load * times
        capacity = {name: link.bandwidth_bytes_per_s for name, link in self.topo.links.items()}
        links = sorted(
            (LinkStats(link=name, bytes=b, utilization=b / (capacity[name] * step_s) if step_s else 0.0)
             for name, b in used.items() if b > 0),
            key=lambda l: (-l.utilization, l.link),
        )
        return ReplayResult(
            trace=self.trace.name, system=self.topo.name, step_time_s=step_s, devices=tuple(devices),
            links=tuple(links), classes=tuple((c.prog.program.name, tuple(c.devices)) for c in self.classes),
            ops=self.trace.num_ops, comm_instances=self.comm_instances, comm_groups_folded=len(self.folded_plans),
            kernels_simulated=self.costs.kernels_simulated - self.kernels_before,
            events=self.env.processed + self.pool.events, sim_wall_s=wall_s, segments=tuple(self.segments),
            link_counters=tuple(self.link_counters),
        )

    def _stats(self, cls: _Class, step_ps: int) -> dict:
        self._account(cls)
        compute = cls.compute_only_ps + cls.both_ps
        comm = cls.comm_only_ps + cls.both_ps
        idle = step_ps - cls.compute_only_ps - cls.comm_only_ps - cls.both_ps
        return dict(
            program=cls.prog.program.name, finish_s=ps_to_seconds(cls.finish_ps), compute_s=ps_to_seconds(compute),
            comm_s=ps_to_seconds(comm), overlapped_comm_s=ps_to_seconds(cls.both_ps),
            exposed_comm_s=ps_to_seconds(cls.comm_only_ps), idle_s=ps_to_seconds(idle),
        )


def _instance_kind(op: Op) -> str:
    """A send and its recv are one instance, of kind ``send/recv``."""
    return "send/recv" if op.kind in P2P_KINDS else op.kind


def chip_of(system: Arch) -> Chip:
    """The chip every device of a node, torus, cluster or multislice is."""
    if isinstance(system, Chip):
        raise InputError(f"{system.name!r} is not a system (a node, torus, cluster or multislice)", source="--system")
    return model.chip_of(system)


def check_devices(trace: SystemTrace, system: Arch) -> None:
    """Refuse a trace with more devices than ``system`` has chips (needs no links, so a
    sweep checks every point's system with it before building any)."""
    if trace.num_devices > system.num_chips:
        raise InputError(f"the trace has {trace.num_devices} devices; {system.name!r} has {system.num_chips}",
                         field="num_devices")


def _ranks_text(ranks: tuple[int, ...]) -> str:
    if len(ranks) > 2 and list(ranks) == list(range(ranks[0], ranks[0] + len(ranks))):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


def replay(trace: SystemTrace, system: Arch, *, base_dir: str | Path = ".",
           options: ReplayOptions = ReplayOptions(), costs: CostModel | None = None) -> ReplayResult:
    """Replay ``trace`` on ``system`` (a resolved node, torus, cluster or multislice).

    ``base_dir`` is where relative kernel-trace paths are found (the trace's folder).
    ``costs`` shares compute-op costs between replays on the same chip (a
    ``CostModel(chip, Path(base_dir))``); by default each replay prices its own.
    Bad input, collectives that do not match between devices and stalls raise
    :class:`InputError`.
    """
    started = time.perf_counter()
    run = _Replay(trace, system, Path(base_dir), options, costs)
    run.run()
    return run.result(time.perf_counter() - started)
