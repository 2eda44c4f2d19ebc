"""GPU replay: programs (CTAs) are dispatched in launch order onto ``cores x occupancy``
slots; programs started at one moment with the same cohort key and SM residency form a
*cohort* that runs as one fluid flow. Its demand is the exact sum of its members' bytes
and core-seconds on each shared resource (SM issue, local memory, SM ports to L2, L2 and
HBM bandwidth), and its top speed is that of its members alone at their SMs' residency
(:class:`~accelsim.engine.program_times.ProgramTimes`). When a cohort ends, its slots go
to the next programs; waves, tails and occupancy limits follow from that.

Read top to bottom: :func:`simulate_gpu` prepares a :class:`GpuKernel` (what the replay
sees of each program), then :class:`GpuDispatch` replays it on a fluid pool, with
:class:`LaunchOrder` (where dispatch stands, and the kernel boundaries it waits at),
:class:`Residency` (re-rating flows when their SMs' residents change) and the wave
fast-forward (:class:`~accelsim.engine.shortcuts.WaveSkipper`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from accelsim.arch.model import GpuChip
from accelsim.engine.cohorts import SMALL_BATCH, CoreSlots, cohort_keys, groups
from accelsim.engine.fluid import Flow
from accelsim.engine.gpu_bound import gpu_lower_bound_s
from accelsim.engine.occupancy import gpu_occupancies
from accelsim.engine.program_times import (
    ProgramTimes,
    at_rows,
    gpu_program_times,
    hbm_queueing_s,
    instruction_streams,
    wave_programs,
)
from accelsim.engine.programs import ProgramCosts, program_costs
from accelsim.engine.result import KernelSimulation, ReplayClock, Segment, capacities, kernel_result, kernel_seconds
from accelsim.engine.reuse import absorbed_write_bytes, cache_hit_bytes
from accelsim.engine.shortcuts import (
    Replayed,
    ReplayMemo,
    Shortcuts,
    WaveSkipper,
    identity_boundaries,
    kernel_runs,
    replay_key,
)
from accelsim.engine.write_backs import hbm_traffic
from accelsim.trace.kernel import KernelTrace, check_gpu_grid
from accelsim.units import PS_PER_S, check_simulated_ps, ps_to_seconds

# ---------------------------------------------------------------- what the replay sees


def shared_cache_hits(trace: KernelTrace, chip: GpuChip) -> np.ndarray:
    """Per program, two rows: bytes of its HBM-level reads that the GPU's shared cache (L2)
    serves, and bytes of its writes the L2 absorbs (written again before leaving it,
    :func:`~accelsim.engine.reuse.absorbed_write_bytes`): the reuse model at the kernel's
    concurrency, as a replay uses it. A search computes it once per config for both its
    bound and its replay."""
    window = reuse_window(trace, chip)
    if window is None:
        return np.zeros((2, trace.num_programs))
    return np.stack([cache_hit_bytes(trace, **window), absorbed_write_bytes(trace, **window)])


def reuse_window(trace: KernelTrace, chip: GpuChip) -> dict[str, Any] | None:
    """All that :func:`shared_cache_hits` reads of the chip (None: no shared cache): the
    programs resident at once per kernel of the trace and the L2's capacity. A sweep whose
    points change neither shares the hits between them."""
    if chip.shared_cache is None:
        return None
    return {"concurrency": [chip.num_cores * per_core for per_core, _ in gpu_occupancies(trace, chip)],
            "capacity_bytes": chip.shared_cache.capacity_bytes}


REUSE_BLIND = {"kernel": {"resources", "kernel_resources", "pipeline_depth"}, "metadata": True}
"""What of a trace the reuse model never reads: the programs' resources (they set how
many programs are resident at once, which :func:`reuse_window` gives), the pipeline
depth (timing) and the metadata (names, the config)."""


def reuse_key(trace: KernelTrace, chip: GpuChip, *, body: str | None = None) -> str:
    """All that :func:`shared_cache_hits` depends on, as one string: the reuse window and
    the trace less :data:`REUSE_BLIND` (``body``, where the caller has it already). A
    search's configs that differ only in warps or pipeline stages (at the same residency)
    share their hits."""
    return f"{reuse_window(trace, chip)!r}" + (body if body is not None else trace.model_dump_json(exclude=REUSE_BLIND))


def demand_columns(costs: ProgramCosts, hbm: np.ndarray, shared_cache: bool) -> dict[str, np.ndarray]:
    """Each program's demand on the GPU's shared resources, from its ``costs`` and the
    bytes it moves to and from HBM past the L2 (per program, or per run of identical
    programs)."""
    demand = {
        "matrix": costs.matrix_s,
        "vector": costs.vector_s,
        "local_memory": costs.local_bytes,
        "port": costs.read_bytes + costs.write_bytes + costs.pinned_bytes,
        "hbm": hbm,
    }
    if shared_cache:
        demand["shared_cache"] = costs.cache_bytes
    return demand


@dataclass(frozen=True)
class GpuKernel:
    """What a GPU replay sees of a trace: per program (or per run of identical programs,
    ``run_of`` mapping launch positions to runs), its demand on each resource, its times on
    an SM and its cohort key; per kernel of the trace, the SM's program slots."""

    programs: int
    per_cores: list[int]
    """Resident programs per SM, per kernel of the trace."""
    barriers: list[int]
    """Launch positions where a later kernel starts (``kernel.kernel_starts``)."""
    resources: list[str]
    demand_rows: np.ndarray
    """Rows (programs or runs) x ``resources``."""
    times: ProgramTimes
    group_key: np.ndarray
    run_starts: np.ndarray
    run_of: np.ndarray | None
    """Each launch position's row; None: every program is its own row."""

    @cached_property
    def group_keys(self) -> list[int]:
        """:attr:`group_key` as Python ints, for a few programs at a time (made when first asked)."""
        return self.group_key.tolist()

    def rows(self, programs: np.ndarray) -> np.ndarray:
        return programs if self.run_of is None else self.run_of[programs]

    def memo_key(self, chip: GpuChip, caps: dict[str, float], kernel_starts: list[int] | None) -> bytes:
        return replay_key(chip, self.per_cores, self.resources, caps, self.times, self.demand_rows, self.group_key,
                          kernel_starts, self.run_starts if self.run_of is not None else None, self.programs)

    def boundaries(self) -> np.ndarray:
        """Launch positions where a run of programs identical in all the replay sees ends,
        kernels' starts included (a kernel's first wave waits its startup)."""
        changes = identity_boundaries(self.times, self.demand_rows, self.group_key)  # in rows
        return np.union1d(changes if self.run_of is None else self.run_starts[changes], self.barriers)


def prepare_gpu(trace: KernelTrace, chip: GpuChip, costs: ProgramCosts, hits: np.ndarray,
                runs_from: int | None) -> tuple[GpuKernel, dict[str, float], np.ndarray, dict]:
    """The replay's view of the trace, the resources' capacities, each program's HBM bytes
    past the L2, and what the result reports of the L2 and HBM queueing."""
    per_cores = [per_core for per_core, _ in gpu_occupancies(trace, chip)]
    hbm_reads, hbm_writes = hbm_traffic(chip, costs, hits)
    hits, written_back = hits[0], costs.write_bytes - hbm_writes
    hbm = hbm_reads + hbm_writes
    hbm_totals = (float(hbm_reads.sum()), float(hbm_writes.sum()))
    caps = capacities(chip, chip.num_cores, 1.0, *hbm_totals)
    # Programs in runs of identical ones (an even kernel is one or two runs) are timed once
    # per run: `run_of` maps a launch position to its run (None: every program its own).
    wave = wave_programs(trace, chip, per_cores)
    starts, run_of = kernel_runs(trace, costs, hits, written_back, wave, runs_from=runs_from)
    ran, run_hits, run_hbm = (costs, hits, hbm) if run_of is None else (costs.take(starts), hits[starts], hbm[starts])
    demand = demand_columns(ran, run_hbm, "shared_cache" in caps)
    depth, streams = trace.kernel.pipeline_depth, instruction_streams(trace, chip)
    barriers = trace.kernel.kernel_starts or []
    queue = 0.0
    if chip.hbm.queueing_latency_s:
        columns = demand if run_of is None else demand_columns(costs, hbm, "shared_cache" in caps)
        totals = {r: float(column.sum()) for r, column in columns.items()}
        # one delay for the trace: at the residents of the kernel that moves the most HBM bytes
        busiest = int(np.argmax(np.add.reduceat(hbm, [0, *barriers]))) if len(per_cores) > 1 else 0
        queue = hbm_queueing_s(chip, costs, hits, depth, streams, per_cores[busiest], totals, caps,
                               chip.hbm.queueing_mix(*hbm_totals))
    kernel = GpuKernel(
        programs=costs.num_programs, per_cores=per_cores, barriers=barriers, resources=list(demand),
        demand_rows=np.stack(list(demand.values()), axis=1),
        times=gpu_program_times(chip, ran, run_hits, depth, at_rows(streams, starts), queue_s=queue,
                                wave=wave[starts],
                                hbm_write_share=np.divide(hbm_writes[starts], ran.write_bytes,
                                                          out=np.zeros_like(ran.write_bytes),
                                                          where=ran.write_bytes > 0)),
        group_key=cohort_keys(ran), run_starts=starts, run_of=run_of,
    )
    read = float(costs.read_bytes.sum())
    specific = {
        "shared_cache_hit_rate": float(hits.sum() / read) if read else None,
        "hbm_queueing_s": queue if chip.hbm.queueing_latency_s else None,
    }
    return kernel, caps, hbm, specific


# ---------------------------------------------------------------- the replay


def simulate_gpu(trace: KernelTrace, chip: GpuChip, *, timeline: bool = False, memo: ReplayMemo | None = None,
                 hits: np.ndarray | None = None, costs: ProgramCosts | None = None,
                 shortcuts: Shortcuts = Shortcuts()) -> KernelSimulation:
    """Replay a kernel trace on a GPU; ``memo``: replays already made by the same search."""
    if costs is None:
        costs = program_costs(trace, chip)
    if hits is None:
        hits = shared_cache_hits(trace, chip)
    kernel, caps, hbm, specific = prepare_gpu(trace, chip, costs, hits, shortcuts.runs_from)
    occupancies = gpu_occupancies(trace, chip)
    key = kernel.memo_key(chip, caps, trace.kernel.kernel_starts) if memo is not None and not timeline else None
    if key is not None and key in memo:
        done = memo[key]
        segments, counters = [], []
    else:
        clock = ReplayClock.new(caps, timeline)
        kernel_ends = GpuDispatch(clock, kernel, chip.num_cores, shortcuts.fast_forward_waves and not timeline).run()
        done = Replayed(clock.pool.used, clock.pool.events, clock.env.now, (*kernel_ends, clock.env.now))
        segments, counters = clock.segments, clock.counters
        if key is not None:
            memo[key] = done
    per_kernel_s = kernel_seconds(done.kernel_ends_ps)
    return kernel_result(trace, chip, costs, done, caps, done.body_ps, hbm, segments=segments, counters=counters,
                         per_kernel_s=per_kernel_s, **occupancy_summary(trace, occupancies, per_kernel_s), **specific)


def occupancy_summary(trace: KernelTrace, occupancies: list[tuple[int, str]], per_kernel_s: list[float]) -> dict:
    """``programs_per_core``, ``occupancy_limit`` and ``local_memory_bytes`` of a replay: those
    of its longest kernel (the only one, or the one that sets most of the time)."""
    longest = int(np.argmax(per_kernel_s)) if len(occupancies) > 1 else 0
    per_core, limit = occupancies[longest]
    return {"programs_per_core": per_core, "occupancy_limit": limit,
            "local_memory_bytes": trace.resources_by_kernel[longest].local_memory_bytes}


def after_startup(seconds: float, waited: float) -> float:
    """A program's time left once ``waited`` seconds of its startup have passed (never
    zero: a rate is its inverse)."""
    return max(seconds - waited, seconds * 1e-9)


@dataclass
class Pace:
    """A cohort's pace as :class:`Residency` keeps it: each member's row in the program
    times and its seconds at its SM's residents now, their sum, the kernel-start wait it
    has had, and the SMs its members run on (ascending)."""

    rows: np.ndarray
    seconds: np.ndarray
    total_s: float
    waited_s: float
    sms: list[int]


@dataclass(eq=False)
class Cohort(Flow):
    """Programs started together on SMs of one residency with one cohort key: one flow.
    Its members finish together, at the mean of their times alone."""

    count: int = 1
    cores: np.ndarray | None = None
    """Each member's SM."""
    pace: Pace | None = None
    """With re-rating (:class:`Residency`)."""


class LaunchOrder:
    """Where dispatch stands in the launch order: the next program, the SMs' free program
    slots, and the kernel boundaries (``kernel.kernel_starts``) it may not pass until every
    program before has finished (then the SMs take that kernel's residents)."""

    def __init__(self, env, programs: int, barriers: list[int], slots_per_kernel: list[int]) -> None:
        self.env = env
        self.programs = programs
        self.barriers = barriers
        self.slots_per_kernel = slots_per_kernel
        self.next = 0
        self.slots = self.free = slots_per_kernel[0]
        self.kernel = 0
        self.firsts = {0, *barriers}
        self.kernel_ends: list[int] = []
        """When each kernel but the last ended."""

    def limit(self) -> int:
        """The launch position dispatch may not pass now: the next kernel's start, until
        every program before it has finished."""
        barriers = self.barriers
        while self.kernel < len(barriers) and self.next >= barriers[self.kernel] and self.free == self.slots:
            self.kernel += 1
            self.kernel_ends.append(self.env.now)
            self.free = self.slots = self.slots_per_kernel[self.kernel]
        return barriers[self.kernel] if self.kernel < len(barriers) else self.programs


class Residency:
    """Re-rating: a program runs at the pace its SM's residents allow *now*. When a
    neighbour finishes with nothing to take its place (a kernel's tail, before a barrier),
    or a newcomer joins an SM that had room, the flows with programs on that SM are
    re-rated: their progress stands, what is left goes at the new pace. Only the members
    on changed SMs are timed again."""

    def __init__(self, cores: CoreSlots, times: ProgramTimes, pool) -> None:
        self.cores = cores
        self.times = times
        self.pool = pool
        self.on_core: list[dict[Cohort, None]] = [{} for _ in range(len(cores.resident))]
        """Per SM, the cohorts with programs on it (in the order they started)."""
        self.placed: list[np.ndarray] = []
        """The SMs of programs dispatched since the last end."""

    def track(self, cohort: Cohort, rows: np.ndarray, seconds: np.ndarray, waited: float = 0.0) -> None:
        cores = cohort.cores
        sms = [int(cores[0])] if len(cores) == 1 else sorted(set(cores.tolist()))
        cohort.pace = Pace(rows, seconds, float(seconds.sum()), waited, sms)
        for core in sms:
            self.on_core[core][cohort] = None

    def forget(self, cohort: Cohort) -> None:
        for core in cohort.pace.sms:
            del self.on_core[core][cohort]
        self.placed.clear()

    def rerate(self, released: np.ndarray) -> None:
        """New paces for the flows with programs on SMs whose residents changed: those that
        lost ``released`` programs and gained other than as many from this dispatch."""
        placed = self.placed
        if len(released) == 1 and len(placed) == 1 and len(placed[0]) == 1 and placed[0][0] == released[0]:
            return  # one program ended, one started on its SM: the steady state of uneven kernels
        gained = np.concatenate(placed) if placed else released[:0]
        if len(gained) == len(released) and np.array_equal(np.sort(gained), np.sort(released)):
            return  # every freed slot refilled on its own SM: the steady state
        cores = len(self.on_core)
        change = np.bincount(gained, minlength=cores) - np.bincount(released, minlength=cores)
        touched: dict[Cohort, None] = {}
        for core in np.flatnonzero(change).tolist():
            residents = int(self.cores.resident[core])
            for cohort in self.on_core[core]:
                if cohort.finished_ps is not None:  # ended in this same instant; its callback is next
                    continue
                self._retime(cohort, core, residents)
                touched[cohort] = None
        flows, paces = [], []
        for cohort in touched:
            pace = 1.0 / after_startup(cohort.pace.total_s / len(cohort.pace.rows), cohort.pace.waited_s)
            if pace == cohort.max_rate:
                continue
            if cohort.slot < 0:  # still waiting the kernel's start: it starts at this pace
                cohort.max_rate = pace
            else:
                flows.append(cohort)
                paces.append(pace)
        self.pool.set_max_rates(flows, paces)

    def _retime(self, cohort: Cohort, core: int, residents: int) -> None:
        """A cohort's members on ``core``, timed again at its ``residents``."""
        pace = cohort.pace
        if cohort.count == 1:  # one program: in Python scalars (the same arithmetic)
            pace.total_s = self.times.lists.seconds(int(pace.rows[0]), residents)
            return
        members = np.flatnonzero(cohort.cores == core)
        now = self.times.seconds(pace.rows[members], residents)
        pace.total_s += float(now.sum() - pace.seconds[members].sum())
        pace.seconds[members] = now


class GpuDispatch:
    """Dispatch: programs start in launch order on free slots, each on the SM with the
    fewest residents; programs started at one moment form cohorts, one flow each. A
    cohort's end frees its slots and dispatches the next programs."""

    def __init__(self, clock: ReplayClock, kernel: GpuKernel, cores: int, fast_forward: bool) -> None:
        self.clock = clock
        self.env, self.pool = clock.env, clock.pool
        self.kernel = kernel
        slots = [cores * per_core for per_core in kernel.per_cores]
        self.launch = LaunchOrder(self.env, kernel.programs, kernel.barriers, slots)
        self.cores = CoreSlots(cores)
        self.most = max(kernel.per_cores)
        self.residency = Residency(self.cores, kernel.times, self.pool) if self.most > 1 else None
        self.skipper = WaveSkipper(self.pool, kernel.boundaries) if fast_forward else None

    def run(self) -> list[int]:
        """Replay every program; when each kernel but the last ended (ps)."""
        self.dispatch()
        self.env.run()
        return self.launch.kernel_ends

    def dispatch(self) -> None:
        launch = self.launch
        end = launch.limit()  # first: at a kernel's start it sets that kernel's slots
        take = min(launch.free, end - launch.next)
        if take <= 0:
            return
        first = launch.free == launch.slots and launch.next in launch.firsts  # a kernel's first, on an idle chip
        if take == 1 and not first:  # one program finished, one starts: the common case of uneven kernels
            self._dispatch_one()
            return
        if self.skipper is not None:
            self.skipper.clear()
            if not first and take == launch.slots and launch.programs - launch.next >= 2 * launch.slots:
                self.skipper.mark(launch.next, self.env.now)
        self._dispatch_batch(take, first)

    def _dispatch_batch(self, take: int, first: bool) -> None:
        """Start ``take`` programs. A kernel's first programs start on an idle chip: nothing
        moves data until the first of them has paid its overhead and its first load's
        latency, so that much (the least startup among them) is waited before any flow
        starts. Later programs start among running ones, whose transfers hide their startup."""
        kernel, launch = self.kernel, self.launch
        members = np.arange(launch.next, launch.next + take)
        launch.next += take
        launch.free -= take
        core_of = self.cores.place(take)
        if take <= SMALL_BATCH and not first and self._start_few(int(members[0]), take, core_of):
            return
        rows = kernel.rows(members)
        residents = self.cores.resident[core_of]
        keys = kernel.group_key[rows] * (self.most + 1) + residents
        seconds = kernel.times.seconds(rows, residents)
        waited_ps = round(float(kernel.times.startup[rows].min()) * PS_PER_S) if first else 0
        waited = ps_to_seconds(waited_ps)
        cohorts = []
        for chosen in groups(keys):
            ids, chosen_seconds = members[chosen], seconds[chosen]
            count = len(ids)
            cohorts.append(Cohort(
                name=f"programs {ids[0]}..{ids[-1]}" if count > 1 else f"program {ids[0]}",
                demand=dict(zip(kernel.resources,
                                np.add.reduce(kernel.demand_rows.take(rows[chosen], axis=0), axis=0).tolist())),
                # the mean, as ndarray.mean computes it (the sum, divided by the count)
                max_rate=1.0 / after_startup(float(np.add.reduce(chosen_seconds)) / count, waited),
                count=count,
                cores=core_of[chosen],
            ))
            if self.residency is not None:
                self.residency.track(cohorts[-1], rows[chosen], chosen_seconds.copy(), waited)
        if self.residency is not None:
            self.residency.placed.append(core_of)
        if waited_ps:
            if self.clock.timeline:
                self.clock.segments.append(Segment("kernel start", "startup: program overhead + first load's latency",
                                                   self.env.now, self.env.now + waited_ps, {"programs": take}))
            self._after(waited_ps, lambda: self._start(cohorts))
        else:
            self._start(cohorts)

    def _start_few(self, program: int, take: int, core_of: np.ndarray) -> bool:
        """:meth:`_dispatch_batch` for a few programs (not a kernel's first) that form one
        cohort, in Python scalars (the same arithmetic; the cohort's sums by numpy, in its
        order); False, with nothing started, where they form several."""
        kernel, most = self.kernel, self.most
        rows = list(range(program, program + take)) if kernel.run_of is None else \
            kernel.run_of[program:program + take].tolist()
        residents = self.cores.resident.take(core_of).tolist()
        keys, times = kernel.group_keys, kernel.times.lists
        key = keys[rows[0]] * (most + 1) + residents[0]
        if any(keys[row] * (most + 1) + resident != key for row, resident in zip(rows, residents)):
            return False
        seconds = np.array([times.seconds(row, resident) for row, resident in zip(rows, residents)])
        cohort = Cohort(
            name=f"programs {program}..{program + take - 1}" if take > 1 else f"program {program}",
            demand=dict(zip(kernel.resources, np.add.reduce(kernel.demand_rows.take(rows, axis=0), axis=0).tolist())),
            max_rate=1.0 / after_startup(float(np.add.reduce(seconds)) / take, 0.0),
            count=take,
            cores=core_of,
        )
        if self.residency is not None:
            self.residency.track(cohort, np.array(rows, dtype=np.int64), seconds)
            self.residency.placed.append(core_of)
        self._start([cohort])
        return True

    def _dispatch_one(self) -> None:
        """:meth:`_dispatch_batch` for one program, in Python scalars (the same arithmetic)."""
        kernel, launch = self.kernel, self.launch
        program = launch.next
        row = program if kernel.run_of is None else int(kernel.run_of[program])
        launch.next += 1
        launch.free -= 1
        core_of = self.cores.place(1)
        seconds = kernel.times.lists.seconds(row, int(self.cores.resident[core_of[0]]))
        cohort = Cohort(name=f"program {program}", demand=dict(zip(kernel.resources, kernel.demand_rows[row].tolist())),
                        max_rate=1.0 / seconds, count=1, cores=core_of)
        if self.residency is not None:
            self.residency.track(cohort, np.array([row]), np.array([seconds]))
            self.residency.placed.append(core_of)
        self.pool.start_many([cohort])
        cohort.callbacks.append(self._finished)

    def _start(self, cohorts: list[Cohort]) -> None:
        for cohort in self.pool.start_many(cohorts):
            cohort.callbacks.append(self._finished)

    def _after(self, delay_ps: int, then) -> None:
        check_simulated_ps(self.env.now + delay_ps)
        self.env.timeout(delay_ps).callbacks.append(lambda _e: then())

    def _finished(self, cohort: Cohort) -> None:
        launch = self.launch
        launch.free += cohort.count
        self.cores.release(cohort.cores)
        if self.residency is not None:
            self.residency.forget(cohort)
        if self.clock.timeline:
            first, last = int(cohort.cores.min()), int(cohort.cores.max())
            self.clock.segments.append(Segment(f"SMs {first}-{last}" if first != last else f"SM {first}", cohort.name,
                                               cohort.started_ps, cohort.finished_ps, {"programs": cohort.count}))
        skipper = self.skipper
        if skipper is not None and launch.free == launch.slots and skipper.ended(launch.next, launch.slots):
            waves, skip_ps = skipper.skip(launch.next, launch.limit(), launch.slots, self.env.now)
            launch.next += waves * launch.slots
            if skip_ps:  # the pool is idle: nothing to re-rate
                self._after(skip_ps, self.dispatch)
                return
        self.dispatch()
        if self.residency is not None:
            self.residency.rerate(cohort.cores)


class GpuEngine:
    """The chip engine's strategy for GPUs (:class:`~accelsim.engine.chip.ChipEngine`)."""

    def simulate(self, trace: KernelTrace, chip: GpuChip, *, timeline: bool, replays: ReplayMemo | None,
                 hits: np.ndarray | None, costs: ProgramCosts | None, shortcuts: Shortcuts) -> KernelSimulation:
        check_gpu_grid(trace, chip.name)
        return simulate_gpu(trace, chip, timeline=timeline, memo=replays, hits=hits, costs=costs, shortcuts=shortcuts)

    def lower_bound_s(self, trace: KernelTrace, chip: GpuChip, costs: ProgramCosts, hits: np.ndarray | None,
                      shortcuts: Shortcuts) -> float:
        return gpu_lower_bound_s(trace, chip, costs, hits, shortcuts=shortcuts)

    def shared_cache_hits(self, trace: KernelTrace, chip: GpuChip) -> np.ndarray:
        return shared_cache_hits(trace, chip)
