"""Replay of a system trace: one discrete-event run over every device of a system.

Devices run their program's ops as streams do: an op starts when its dependencies have
finished and the op before it on its stream has finished (or, if async, been issued)
(:mod:`accelsim.system.streams`). Three shared things set how long ops take:

* **compute** on a device is processor-shared: ``k`` compute ops running at once on one
  device each progress at ``1/k`` of their speed alone (:mod:`accelsim.system.compute`);
* **links**: every collective and transfer is a plan of flows (``accelsim.network``) on
  one :class:`~accelsim.engine.fluid.FluidResources` pool over all links of the
  topology, so concurrent ones share links max-min fairly (:mod:`accelsim.system.instances`);
* **comm vs compute on GPUs**: while a collective or transfer runs on a device, its
  compute ops progress at ``1 - comm_sm_fraction`` of their speed (``1 -`` the running
  collectives' HBM shares for memory-bound ones): NCCL kernels occupy SMs and move
  their bytes through HBM (see :class:`ReplayOptions`). A collective whose op gives
  ``sm_budget`` takes that many SMs instead (:class:`~accelsim.system.compute.CommLoad`).

**Folding.** Devices of one program that are interchangeable (the program has no
send/recv and every collective's groups have one size) are replayed as one *class*
that advances in lockstep, so a 1024-chip SPMD step costs about what one chip does.
Collectives still start one plan per replica group on the shared links (one, when the
groups are translates whose links nothing else loads meanwhile: see
:mod:`accelsim.system.layout`); a class's collective ends when its slowest group does
(exact when groups are symmetric). ``fold=False`` replays every device on its own; the
other shortcuts are :class:`ReplayShortcuts`.

Time is the SimPy clock in integer picoseconds; ties break in event order, so a
replay is deterministic.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import simpy

from accelsim.arch import model
from accelsim.arch.model import Arch, Chip, GpuChip
from accelsim.engine.fluid import FluidResources
from accelsim.errors import InputError
from accelsim.network import build_topology, link_loads
from accelsim.network.topology import Topology
from accelsim.results import DeviceStats, LinkStats, StepResult
from accelsim.system.compute import HBM_SHARE_CAP, CommLoad, DeviceCompute, PerOpCompute
from accelsim.system.costs import CostModel
from accelsim.system.energy import device_j, link_j_per_byte, links_j
from accelsim.system.first_use import waited_at_first_use
from accelsim.system.instances import Rendezvous
from accelsim.system.layout import CommLayout, members_moving
from accelsim.system.plans import PlanBook, ranks_text
from accelsim.system.program import comm_in_flight, compile_program
from accelsim.system.streams import NOT_ISSUED, Completions, DeviceClass, Segment, Streams
from accelsim.system.trace import SystemTrace
from accelsim.units import UnitError, parse_quantity, ps_to_seconds

__all__ = ["HBM_SHARE_CAP", "NCCL_CHANNELS_ESTIMATE", "PLAIN", "ReplayOptions", "ReplayResult", "ReplayShortcuts",
           "Segment", "check_devices", "chip_of", "comm_fractions", "parse_roofline_overhead", "replay"]

NCCL_CHANNELS_ESTIMATE = 16
"""SMs a running NCCL collective holds on a GPU: one CTA per channel. NCCL picks 2-32
channels by message size and topology; 16 is an estimate for large NVLink transfers,
not fitted (``--comm-sm-fraction`` overrides)."""


@dataclass(frozen=True, kw_only=True)
class ReplayShortcuts:
    """The replay's exactness-preserving shortcuts, each a layer that can be switched off
    (the tests check that each gives the plain path's result). Folding devices into
    classes is :attr:`ReplayOptions.fold` (``--no-fold``)."""

    fold_groups: bool = True
    """A folded class plays one group of a collective whose groups' plans are translates
    with links nothing else loads meanwhile (:mod:`accelsim.system.layout`)."""
    representative_parts: bool = True
    """A collective planned as one of its identical parts plays that part alone where
    nothing else meets the others (:class:`~accelsim.system.plans.PlanBook`)."""
    coalesce_starts: bool = True
    """The link pool reallocates once per instant, not once per phase start
    (:class:`~accelsim.engine.fluid.FluidResources`)."""
    shared_clock: bool = True
    """A device's compute ops of one slowdown advance on one clock
    (:class:`~accelsim.system.compute.DeviceCompute`), not each on its own."""


PLAIN = ReplayShortcuts(fold_groups=False, representative_parts=False, coalesce_starts=False, shared_clock=False)
"""No shortcut: the plain path the shortcuts are tested against (with ``fold=False``)."""


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
    wait_at_first_use: bool = False
    """A what-if on the schedule: every async op waited for at the first op that uses its
    result, not at its ``done`` (:func:`~accelsim.system.first_use.waited_at_first_use`)."""
    shortcuts: ReplayShortcuts = field(default_factory=ReplayShortcuts)

    def __post_init__(self) -> None:
        for name in ("comm_sm_fraction", "comm_hbm_fraction"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value < 1.0:
                raise InputError(f"expected a fraction in [0, 1), got {value!r}", field=name)


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
    each collective takes its own (:meth:`~accelsim.system.plans.PlanBook.hbm_share`: GPUs without
    ``--comm-hbm-fraction``)."""
    if isinstance(chip, GpuChip):
        sm = min(1.0, NCCL_CHANNELS_ESTIMATE / chip.num_cores)
        hbm = None
    else:
        sm = hbm = 0.0
    sm = sm if options.comm_sm_fraction is None else options.comm_sm_fraction
    hbm = hbm if options.comm_hbm_fraction is None else options.comm_hbm_fraction
    return sm, hbm


# ------------------------------------------------------------------ results


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
    """With a timeline: the devices' spans (their streams' ops and the ``comm`` lane)."""
    host_segments: tuple[Segment, ...] = ()
    """With a timeline, where a program has a host timeline: the host's span issuing each op
    (:func:`_host_segments`, the ``host`` lane), apart from :attr:`segments` so that readers of
    the devices' spans need not tell them apart."""
    link_counters: tuple[tuple[int, float, float, float], ...] = ()
    """After every reallocation, with a timeline: (time ps, bytes/s over all links, over the
    scale-out links (NICs, DCN), the busiest link's share of its bandwidth)."""
    link_energy_j: float | None = None
    """On a chip with a power model (``docs/power.md``)."""

    def result(self) -> StepResult:
        """What the replay found, in the shared results schema."""
        return StepResult(
            trace=self.trace, system=self.system, step_time_s=self.step_time_s, devices=self.devices,
            links=self.links, replayed_classes=len(self.classes), ops=self.ops, comm_instances=self.comm_instances,
            comm_groups_folded=self.comm_groups_folded, kernels_simulated=self.kernels_simulated,
            events=self.events, sim_wall_s=self.sim_wall_s, link_energy_j=self.link_energy_j,
        )

    def summary(self) -> dict:
        """The ``--json`` form of :meth:`result` (stable keys, docs/replay.md)."""
        return self.result().to_json()


# ------------------------------------------------------------------ the run


class _CountingEnv(simpy.Environment):
    """A SimPy environment that counts the events it processes."""

    def __init__(self) -> None:
        super().__init__()
        self.processed = 0

    def step(self) -> None:
        self.processed += 1
        super().step()


class _Replay:
    """One replay: the trace's programs compiled into classes of devices, their streams
    (:class:`~accelsim.system.streams.Streams`), compute
    (:class:`~accelsim.system.compute.DeviceCompute`) and collectives
    (:class:`~accelsim.system.instances.Rendezvous`) on one SimPy clock, and the link pool
    every collective plays on."""

    def __init__(self, trace: SystemTrace, system: Arch, base_dir: Path, options: ReplayOptions,
                 costs: CostModel | None = None) -> None:
        self.trace = trace
        self.options = options
        self.topo: Topology = build_topology(system)
        self.system = system
        self.chip: Chip = chip_of(system)
        check_devices(trace, system)
        self.costs = _shared_costs(costs, self.chip, base_dir, options) or CostModel(
            self.chip, base_dir, options.roofline_overhead_s)
        self.kernels_before = self.costs.kernels_simulated
        self.env = _CountingEnv()
        self.segments: list[Segment] | None = [] if options.timeline else None
        self.host_segments: list[Segment] = []
        self.completions = Completions()
        self.classes = self._classes()
        shortcuts = options.shortcuts
        self.plans = PlanBook(self.topo, options.algorithm, shortcuts.representative_parts)
        layout = CommLayout(self.classes, self.plans, options.fold and shortcuts.fold_groups)
        joins = layout.joins()
        check_link_sharing(trace, members_moving(self.classes, joins))
        self.layout = layout.build(joins)
        # one pool for every link any collective of the trace crosses (the others would only
        # add columns to every reallocation); many groups' phases start at the same
        # instants: one reallocation for each instant
        links = sorted(self.layout.links)
        self.pool = FluidResources(self.env, {n: self.topo.links[n].bandwidth_bytes_per_s for n in links},
                                   coalesce_starts=shortcuts.coalesce_starts)
        self.link_counters: list[tuple[int, float, float, float]] = []
        if options.timeline:
            self.pool.observer = _LinkCounters(self.topo, links, self.link_counters)
        hbm = self.chip.hbm.bandwidth_bytes_per_s if isinstance(self.chip, GpuChip) else None
        self.rendezvous = Rendezvous(self.env, self.pool, self.plans, self.layout.joined, self.classes,
                                     self.completions, hbm, self.segments)
        self.streams = Streams(self.env, self.costs, self.rendezvous, self.completions, self.segments)

    def _classes(self) -> list[DeviceClass]:
        sm_fraction, hbm_fraction = comm_fractions(self.chip, self.options)
        shared_clock = self.options.shortcuts.shared_clock
        classes: list[DeviceClass] = []
        indexes: dict[tuple, dict] = {}
        for p, program in enumerate(self.trace.programs):
            prog = compile_program(p, program, indexes)
            fold = self.options.fold and prog.foldable
            for devices in [prog.devices] if fold else [[d] for d in prog.devices]:
                comm = CommLoad(sm_fraction=sm_fraction, hbm_fraction=hbm_fraction, sms=self.chip.num_cores)
                make = DeviceCompute if shared_clock else PerOpCompute
                compute = make(self.env, comm, after_ends=self.completions.drain)
                classes.append(DeviceClass(id=len(classes), prog=prog, devices=devices, compute=compute))
        return classes

    def run(self) -> None:
        self.streams.start(self.classes)
        self.env.run()
        for cls in self.classes:
            if cls.ops_left:
                message, i = stall_message(cls, self.classes, self.rendezvous)
                where = f"programs[{cls.prog.index}]" + (f".ops[{i}]" if i is not None else "")
                raise InputError(message, field=where)
        if self.segments is not None:
            self.host_segments = _host_segments(self.classes)

    # -------------------------------------------------------------- results

    def result(self, wall_s: float) -> ReplayResult:
        step_ps = max(cls.finish_ps for cls in self.classes)
        devices = []
        power = self.chip.power
        for cls in self.classes:
            stats = DeviceStats(device=0, **_stats(cls, step_ps))
            if power is not None:
                stats = replace(stats, energy_j=device_j(stats, cls.prog.costs, power))
            devices.extend(replace(stats, device=d) for d in cls.devices)
        devices.sort(key=lambda s: s.device)
        step_s = ps_to_seconds(step_ps)
        links = self._link_stats(step_s)
        link_energy = links_j(links, self.topo, link_j_per_byte(self.system, self.chip)) if power else None
        return ReplayResult(
            trace=self.trace.name, system=self.topo.name, step_time_s=step_s, devices=tuple(devices),
            links=links, link_energy_j=link_energy,
            classes=tuple((c.prog.program.name, tuple(c.devices)) for c in self.classes),
            ops=self.trace.num_ops, comm_instances=self.rendezvous.played,
            comm_groups_folded=len(self.layout.folded_plans),
            kernels_simulated=self.costs.kernels_simulated - self.kernels_before,
            events=self.env.processed + self.pool.events, sim_wall_s=wall_s,
            segments=tuple(self.segments or ()), host_segments=tuple(self.host_segments), link_counters=tuple(self.link_counters),
        )

    def _link_stats(self, step_s: float) -> tuple[LinkStats, ...]:
        used = self.pool.used
        # Folded groups' links carried what their played translate's did; a plan (cached
        # per kind, size and group) recurs once per layer, so its loads are summed once.
        repeats: dict[int, list] = {}
        for plan in self.layout.folded_plans:
            repeats.setdefault(id(plan), [plan, 0])[1] += 1
        for plan, times in repeats.values():
            for link, load in link_loads(plan).items():
                used[link] = used.get(link, 0.0) + load * times
        links = self.topo.links  # a cluster's are made as asked for: only the used ones
        return tuple(sorted(
            (LinkStats(link=name, bytes=b,
                       utilization=b / (links[name].bandwidth_bytes_per_s * step_s) if step_s else 0.0)
             for name, b in used.items() if b > 0),
            key=lambda l: (-l.utilization, l.link),
        ))


MAX_LINK_SHARING_WORK = 1e8
"""The most flow updates the link pool may be asked for, estimated before anything is
planned as the collectives and transfers a device can have moving data at once times
the members of every instance (about the fewest transfers they start): every start or
end of a transfer reallocates the links among the flows running then. 1600 all-reduces
of distinct sizes in flight at once on a 4x4 torus (4.1e7) took 173 s on the loaded
development machine. The rest of a replay grows about linearly with its ops."""


def check_link_sharing(trace: SystemTrace, members: int) -> None:
    """Refuse a trace whose link sharing would cost more than :data:`MAX_LINK_SHARING_WORK`
    (many collectives in flight at once: thousands of streams, or of async collectives,
    each carrying one); ``members``: :func:`~accelsim.system.layout.members_moving`."""
    in_flight, p = max((comm_in_flight(program), p) for p, program in enumerate(trace.programs))
    estimate = in_flight * members
    if estimate > MAX_LINK_SHARING_WORK:
        raise InputError(
            f"up to {in_flight:,} collectives or transfers in flight at once on a device x {members:,} members of "
            f"them: sharing the links would cost about {estimate:.2g} flow updates, past the limit of "
            f"{MAX_LINK_SHARING_WORK:.0e}", field=f"programs[{p}]")


def _shared_costs(costs: CostModel | None, chip: Chip, base_dir: Path, options: ReplayOptions) -> CostModel | None:
    if costs is not None and (costs.chip != chip or costs.base_dir != base_dir
                              or costs.roofline_overhead_s != options.roofline_overhead_s):
        raise ValueError("a shared CostModel must be for the system's chip, the trace's base_dir and the "
                         "options' roofline overhead")
    return costs


class _LinkCounters:
    """The pool's observer with a timeline: after every reallocation, the load summed
    over all links and over the scale-out ones, and the busiest link's share."""

    def __init__(self, topo: Topology, names: list[str], out: list[tuple[int, float, float, float]]) -> None:
        self.count = len(names)
        self.capacity = np.array([topo.links[n].bandwidth_bytes_per_s for n in names])
        self.scale_out = np.array([topo.links[n].scale_out for n in names])
        self.out = out

    def __call__(self, now: int, pool: FluidResources) -> None:
        load = np.fromiter(pool.rates().values(), float, self.count)  # the pool's order: sorted names
        self.out.append((now, float(load.sum()), float(load[self.scale_out].sum()),
                         float((load / self.capacity).max(initial=0.0))))


def _stats(cls: DeviceClass, step_ps: int) -> dict:
    cls.compute.account()
    a = cls.compute.activity
    compute = a.compute_only_ps + a.both_ps
    comm = a.comm_only_ps + a.both_ps
    idle = step_ps - a.compute_only_ps - a.comm_only_ps - a.both_ps
    return dict(
        program=cls.prog.program.name, finish_s=ps_to_seconds(cls.finish_ps), compute_s=ps_to_seconds(compute),
        comm_s=ps_to_seconds(comm), overlapped_comm_s=ps_to_seconds(a.both_ps),
        exposed_comm_s=ps_to_seconds(a.comm_only_ps), idle_s=ps_to_seconds(idle),
    )


def stall_message(cls: DeviceClass, classes: list[DeviceClass], rendezvous: Rendezvous) -> tuple[str, int | None]:
    """Why ``cls`` cannot finish, and the op it is stuck at."""
    ops = cls.prog.ops
    waiting = cls.waiting()
    device = cls.devices[0]
    if not waiting:
        return f"replay stalled: device {device} never started op {ops[cls.finished.index(0)].name!r}", None
    i = waiting[0]
    inst = rendezvous.waiting_in(cls.id, i)
    if inst is None:
        return f"replay stalled: device {device} waits in op {ops[i].name!r}", i
    arrived = {d for c, _ in inst.members for d in classes[c].devices}
    missing = [d for d in inst.ranks if d not in arrived]
    return (f"replay stalled: device {device} waits in {ops[i].kind} {ops[i].name!r} on ranks "
            f"{ranks_text(inst.ranks)} for device {missing[0]}, {_doing(missing[0], classes, rendezvous)} (ops on a "
            f"group must be issued in the same order by every member, on the same groups)"), i


def _doing(device: int, classes: list[DeviceClass], rendezvous: Rendezvous) -> str:
    """What a device that did not join a collective is doing instead."""
    for cls in classes:
        if device in cls.devices:
            for j in cls.waiting():
                inst = rendezvous.waiting_in(cls.id, j)
                if inst is not None:
                    op = cls.prog.ops[j]
                    return (f"which waits in {op.kind} {op.name!r} on ranks {ranks_text(inst.ranks)} "
                            f"(programs[{cls.prog.index}].ops[{j}])")
    return "which never reached the matching op"


def chip_of(system: Arch) -> Chip:
    """The chip every device of a node, torus, cluster or multislice is."""
    if isinstance(system, Chip):
        raise InputError(f"{system.name!r} is not a system (a node, torus, cluster or multislice)", field="system")
    return model.chip_of(system)


def check_devices(trace: SystemTrace, system: Arch) -> None:
    """Refuse a trace with more devices than ``system`` has chips, or an SM budget its
    chips cannot give (needs no links, so a sweep checks every point's system with it
    before building any)."""
    if trace.num_devices > system.num_chips:
        raise InputError(f"the trace has {trace.num_devices} devices; {system.name!r} has {system.num_chips}",
                         field="num_devices")
    check_sm_budgets(trace, chip_of(system))


def check_sm_budgets(trace: SystemTrace, chip: Chip) -> None:
    """Every ``sm_budget`` leaves compute at least one of the chip's SMs; a TPU has no SMs
    to hold (its collectives run on ICI DMA engines), so a budget there is refused, not
    passed over."""
    for p, program in enumerate(trace.programs):
        for i, op in enumerate(program.ops):
            if op.sm_budget is None:
                continue
            where = f"programs[{p}].ops[{i}].sm_budget"
            if not isinstance(chip, GpuChip):
                raise InputError(f"{chip.name} is not a GPU: its collectives hold no SMs", field=where)
            if op.sm_budget >= chip.num_cores:
                raise InputError(f"expected fewer SMs than {chip.name}'s {chip.num_cores} (compute keeps one), "
                                 f"got {op.sm_budget}", field=where)


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
    if options.wait_at_first_use:
        trace = waited_at_first_use(trace)
    with _long_lived_frozen() as freeze:
        run = _Replay(trace, system, Path(base_dir), options, costs)
        freeze()  # what the setup built too
        run.run()
    return run.result(time.perf_counter() - started)


YOUNG_COLLECTION_ALLOCATIONS = 100_000
"""Allocations between the collector's young collections while a replay runs (Python's
default: 700). The run allocates events, callbacks and tuples at every step, nearly all
freed at once by their reference counts, and every tenth young collection of a tenth
walks the objects the replay keeps (instances, results so far) again: the per-rank
1024-chip replay took 6.6-6.8 CPU-s with it where 7.5-8.6 with the default (alternated
runs, load about 8); its peak memory stayed 586 MB."""


@contextmanager
def _long_lived_frozen() -> Iterator[Callable[[], None]]:
    """Keep the cyclic garbage collector off the objects that live through a replay: the
    trace, and what the setup builds (compiled programs, instances, plans). A 10^5-op
    trace is millions of objects, which every full collection walked again (a third of a
    per-rank 1024-chip replay). Yields what freezes the objects made since; all go back to
    the collector when the replay ends. What the replay computes does not depend on when
    garbage is collected. Young collections run less often meanwhile
    (:data:`YOUNG_COLLECTION_ALLOCATIONS`). Left alone where the caller has frozen objects
    already (its own, to unfreeze when it chooses)."""
    if gc.get_freeze_count():
        yield lambda: None
        return
    threshold = gc.get_threshold()
    gc.freeze()
    if threshold[0] > 0:  # 0: the caller turned automatic collection off; keep it off
        gc.set_threshold(max(threshold[0], YOUNG_COLLECTION_ALLOCATIONS), *threshold[1:])
    try:
        yield gc.freeze
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


HOST_LANE = "host"
"""The timeline lane (and segment kind) of the host issuing ops (:func:`_host_segments`)."""


def _host_segments(classes: list[DeviceClass]) -> list[Segment]:
    """Per replayed class with a host timeline, a span per op the host took time to issue:
    from when the host began it to when it was issued (the ``host`` lane of the Perfetto
    timeline). Read after the run, from each class's host queue."""
    segments = []
    for cls in classes:
        if cls.host is None:
            continue
        cost, issued = cls.host.times.issue_ps, cls.host.issued_ps
        for i, op in enumerate(cls.prog.ops):
            if cost[i] and issued[i] != NOT_ISSUED:
                segments.append(Segment(track=cls.id, lane=HOST_LANE, name=op.name, kind=HOST_LANE,
                                        start_ps=issued[i] - cost[i], end_ps=issued[i]))
    return segments
