"""Replay of one kernel trace on one chip: the chip engine.

GPU: programs (CTAs) are dispatched in launch order onto ``cores x occupancy``
slots; programs started at one moment with the same template and iteration count
form a *cohort* (a core group) that runs as one fluid flow. Its demand is the exact
sum of its members' bytes and core-seconds on each shared resource (SM issue,
local memory, SM ports to L2, L2 and HBM bandwidth), and its top speed is that of
one member alone: ``max(compute, local memory, port, latency-bound)`` per program
plus the pipeline prologue and the per-program overhead. When a cohort ends, its
slots go to the next programs. Waves, tails and occupancy limits follow from that.

TPU: each TensorCore used by the kernel runs its grid steps in sequence; the grid is
split over the two TensorCores of a megacore chip along the first ``parallel`` axis.
The Pallas pipeline moves step ``i+1``'s copies while step ``i`` pays its fixed overhead
and computes, so a core's time alone is ``prologue + sum(max(overhead + compute_i,
copy_{i+1})) + drain``; cores share HBM as flows.

See ``docs/engine.md`` for the model and its parameters.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np
import simpy

from accelsim.arch.model import Chip
from accelsim.engine.fluid import Flow, FluidResources
from accelsim.engine.programs import (
    ProgramCosts,
    grid_coordinate,
    kernel_index,
    program_costs,
)
from accelsim.engine.reuse import absorbed_write_bytes, cache_hit_bytes
from accelsim.errors import InputError
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace, Resources, check_gpu_grid
from accelsim.units import PS_PER_S, check_simulated_ps

LATENCY_BOUND_BELOW = 0.5
"""If no resource is busier than this fraction of the kernel time, the kernel is
called latency-bound (too few programs, too shallow a pipeline, or launch cost)."""


@dataclass
class Segment:
    """One span on a timeline track (a cohort of programs on a core group)."""

    track: str
    name: str
    start_ps: int
    end_ps: int
    args: dict = field(default_factory=dict)


@dataclass
class KernelSimulation:
    """Everything one replay produced; :meth:`summary` is the ``--json`` contract."""

    arch: str
    kernel: str
    latency_s: float
    flops: float
    hbm_bytes: float
    utilization: dict[str, float]
    bound: str
    programs: int
    programs_per_core: int
    occupancy_limit: str
    shared_cache_hit_rate: float | None
    events: int
    sim_wall_s: float
    config: dict
    segments: list[Segment]
    counters: list[tuple[int, dict[str, float]]]
    launch_overhead_s: float
    hbm_queueing_s: float | None = None
    """GPU with ``hbm.queueing_latency``: what each HBM load waited on top of the latency."""
    local_memory_bytes: int = 0
    """Shared memory / VMEM one program holds (the trace's resources)."""
    per_kernel_s: list[float] | None = None
    """With several kernels (``kernel.kernel_starts``): each one's time in launch order,
    launch left out, from its first program's start to its last program's end (on a TPU,
    on every TensorCore). They add up to ``latency_s - launch_overhead_s``."""

    @property
    def kernels(self) -> int:
        """Kernels the trace launches one after another, each paying the launch."""
        return len(self.per_kernel_s) if self.per_kernel_s else 1

    def summary(self) -> dict:
        queueing = {} if self.hbm_queueing_s is None else {"hbm_queueing_s": self.hbm_queueing_s}
        queueing |= {} if self.kernels == 1 else {"kernels": self.kernels, "per_kernel_s": self.per_kernel_s}
        return {
            "arch": self.arch,
            "kernel": self.kernel,
            "latency_s": self.latency_s,
            "launch_overhead_s": self.launch_overhead_s,
            "flops": self.flops,
            "hbm_bytes": self.hbm_bytes,
            "achieved_flops_per_s": self.flops / self.latency_s,
            "achieved_hbm_bytes_per_s": self.hbm_bytes / self.latency_s,
            "bound": self.bound,
            "utilization": self.utilization,
            "config": self.config,
            "programs": self.programs,
            "programs_per_core": self.programs_per_core,
            "occupancy_limit": self.occupancy_limit,
            "shared_cache_hit_rate": self.shared_cache_hit_rate,
            "sim_wall_s": self.sim_wall_s,
            "events": self.events,
            "local_memory_bytes": self.local_memory_bytes,
            **queueing,
        }


# ---------------------------------------------------------------- occupancy


def gpu_occupancy(trace: KernelTrace, chip: Chip) -> tuple[int, str]:
    """Resident programs per SM of the trace's first kernel and the limit that sets it."""
    return gpu_occupancies(trace, chip)[0]


def gpu_occupancies(trace: KernelTrace, chip: Chip) -> list[tuple[int, str]]:
    """Per kernel of the trace (``kernel.kernel_resources``), in launch order: resident
    programs per SM and the limit that sets it."""
    return [_occupancy(res, chip, _resources_field(i)) for i, res in enumerate(trace.resources_by_kernel)]


def _resources_field(kernel: int) -> str:
    """Where a trace gives the resources of its ``kernel``-th kernel (0: the first)."""
    return "kernel.resources" if kernel == 0 else f"kernel.kernel_resources[{kernel - 1}]"


def _occupancy(res: Resources, chip: Chip, field: str) -> tuple[int, str]:
    occ, lm = chip.occupancy, chip.local
    assert occ is not None
    if res.local_memory_bytes > lm.max_per_program_bytes:
        raise InputError(
            f"a program needs {res.local_memory_bytes} bytes of {chip.name} local memory; "
            f"at most {int(lm.max_per_program_bytes)} per program",
            field=f"{field}.local_memory_bytes",
        )
    if res.warps > occ.max_warps_per_core:
        raise InputError(
            f"{res.warps} warps per program; {chip.name} allows {occ.max_warps_per_core} per core",
            field=f"{field}.warps",
        )
    limits = {"programs": occ.max_programs_per_core, "warps": occ.max_warps_per_core // res.warps}
    if res.local_memory_bytes:
        limits["local_memory"] = int(lm.capacity_bytes // res.local_memory_bytes)
    if res.tensor_memory_bytes:
        if not lm.tensor_memory_bytes:
            raise InputError(f"a program accumulates in {res.tensor_memory_bytes} bytes of tensor memory; "
                             f"{chip.name} has none (local_memory.tensor_memory)",
                             field=f"{field}.tensor_memory_bytes")
        limits["tensor_memory"] = int(lm.tensor_memory_bytes // res.tensor_memory_bytes)
    if res.registers_per_thread:
        if res.registers_per_thread > occ.max_registers_per_thread:
            raise InputError(
                f"{res.registers_per_thread} registers per thread; {chip.name} allows {occ.max_registers_per_thread}",
                field=f"{field}.registers_per_thread",
            )
        unit = occ.register_allocation_unit
        per_warp = -(-res.registers_per_thread * occ.warp_size // unit) * unit
        limits["registers"] = occ.registers_per_core // (per_warp * res.warps)
    limit = min(limits, key=lambda k: (limits[k], k))
    if limits[limit] < 1:
        raise InputError(f"a program does not fit on one {chip.name} core ({limit})", field=field)
    return limits[limit], limit


# ---------------------------------------------------------------- shared parts


def _capacities(chip: Chip, cores: int, hbm_share: float = 1.0, hbm_reads: float = 0.0,
                hbm_writes: float = 0.0) -> dict[str, float]:
    """Each resource's capacity per second; HBM's for a kernel that reads and writes it
    these many bytes (:meth:`MemoryLevel.mixed_efficiency`)."""
    caps = {
        "matrix": float(cores),
        "vector": float(cores),
        "local_memory": cores * chip.local.bandwidth_bytes_per_cycle * chip.clock_hz,
        "port": cores * chip.local.fill_bandwidth_bytes_per_cycle * chip.clock_hz,
        "hbm": chip.hbm.bandwidth_bytes_per_s * chip.hbm.mixed_efficiency(hbm_reads, hbm_writes) * hbm_share,
    }
    if chip.shared_cache is not None:
        caps["shared_cache"] = chip.shared_cache.bandwidth_bytes_per_s * chip.shared_cache.efficiency
    return caps


def _seconds(ps: int) -> float:
    return ps / PS_PER_S


def _utilization(used: dict[str, float], caps: dict[str, float], body_s: float) -> dict[str, float]:
    if body_s <= 0:
        return {}
    out = {
        "matrix_unit": used.get("matrix", 0.0) / (caps["matrix"] * body_s),
        "vector_unit": used.get("vector", 0.0) / (caps["vector"] * body_s),
    }
    for name in ("local_memory", "port", "shared_cache", "hbm"):
        if name in caps:
            out[name] = used.get(name, 0.0) / (caps[name] * body_s)
    return {k: round(min(float(v), 1.0), 6) for k, v in out.items()}


def _bound(utilization: dict[str, float]) -> str:
    """The busiest resource; else, if matrix and vector work together keep the cores
    busy (a program issues them in turn: a TPU grid step, a GPU warpgroup waiting on
    its softmax), the larger of the two; else ``latency``."""
    if not utilization:
        return "latency"
    name = max(utilization, key=lambda k: (utilization[k], k))
    if utilization[name] >= LATENCY_BOUND_BELOW:
        return name
    matrix, vector = utilization.get("matrix_unit", 0.0), utilization.get("vector_unit", 0.0)
    if matrix + vector >= LATENCY_BOUND_BELOW:
        return "matrix_unit" if matrix >= vector else "vector_unit"
    return "latency"


def _replay(caps: dict[str, float], timeline: bool):
    """A fresh clock and resource pool, with the lists a timeline fills when asked for."""
    env = simpy.Environment()
    pool = FluidResources(env, caps, free_running=True)
    segments: list[Segment] = []
    counters: list[tuple[int, dict[str, float]]] = []
    if timeline:
        pool.observer = lambda now, p: counters.append((now, p.rates()))
    return env, pool, segments, counters


def launch_s(trace: KernelTrace, chip: Chip) -> float:
    """The chip's launch overhead once per kernel of the trace (``kernel.kernel_starts``),
    within the simulated clock's range as every other time is."""
    seconds = chip.launch_overhead_s * (1 + len(trace.kernel.kernel_starts or ()))
    check_simulated_ps(seconds * PS_PER_S)
    return seconds


def _result(trace, chip, costs, pool, caps, body_ps, hbm, per_kernel_s=None, local_memory_bytes=None,
            **specific) -> KernelSimulation:
    """What every replay reports, from the pool's accounting at the end; ``per_kernel_s``: each
    kernel's seconds when the trace has several."""
    body_s = _seconds(body_ps)
    utilization = _utilization(pool.used, caps, body_s)
    return KernelSimulation(
        arch=chip.name,
        kernel=trace.kernel.name,
        latency_s=body_s + launch_s(trace, chip),
        flops=float(costs.flops.sum()),
        hbm_bytes=float(hbm.sum()),
        utilization=utilization,
        bound=_bound(utilization),
        programs=trace.num_programs,
        events=pool.events,
        sim_wall_s=0.0,
        config=dict(trace.metadata.get("config", {})),
        launch_overhead_s=launch_s(trace, chip),
        local_memory_bytes=(trace.kernel.resources.local_memory_bytes if local_memory_bytes is None
                            else local_memory_bytes),
        per_kernel_s=per_kernel_s if trace.kernel.kernel_starts else None,
        **specific,
    )


def _kernel_seconds(ends_ps: Sequence[int]) -> list[float]:
    """Each kernel's seconds from the picoseconds at which each ended (in launch order)."""
    return [_seconds(end - start) for start, end in zip([0, *ends_ps[:-1]], ends_ps)]


# ---------------------------------------------------------------- GPU


@dataclass(frozen=True)
class ProgramTimes:
    """What one program needs on an SM, split so that co-resident programs can share it:
    ``exposed`` latency and overhead it always pays, ``sm`` seconds of the SM's busiest
    unit (matrix, vector, local memory, its port), which co-residents divide, ``chain``
    seconds its own instruction streams need when their matrix and vector work wait on
    each other, and ``latency_bound`` seconds its pipeline needs to keep loads in flight."""

    exposed: np.ndarray
    sm: np.ndarray
    chain: np.ndarray
    latency_bound: np.ndarray
    serial: bool
    """No pipelining (depth 1): latency, transfer and compute add up."""
    startup: np.ndarray
    """The part of ``exposed`` that moves no data: the program's overhead and its first
    load's latency, unloaded (no HBM queueing). A kernel's first programs wait it with
    nothing else running, so it holds up the whole chip (:func:`_simulate_gpu`)."""

    def seconds(self, programs: np.ndarray, residents: np.ndarray | int = 1) -> np.ndarray:
        """Time of each of ``programs`` when ``residents`` programs share its SM."""
        exposed, sm = self.exposed[programs], self.sm[programs]
        if self.serial:
            return exposed + residents * sm
        return exposed + np.maximum.reduce([residents * sm, self.chain[programs], self.latency_bound[programs]])

    def as_lists(self) -> _ProgramTimeLists:
        return _ProgramTimeLists(self.exposed.tolist(), self.sm.tolist(), self.chain.tolist(),
                                 self.latency_bound.tolist(), self.serial)


@dataclass(frozen=True)
class _ProgramTimeLists:
    """:class:`ProgramTimes` as Python floats, for one program at a time."""

    exposed: list[float]
    sm: list[float]
    chain: list[float]
    latency_bound: list[float]
    serial: bool

    def seconds(self, program: int, residents: int) -> float:
        if self.serial:
            return self.exposed[program] + residents * self.sm[program]
        return self.exposed[program] + max(residents * self.sm[program], self.chain[program],
                                           self.latency_bound[program])


def instruction_streams(trace: KernelTrace, chip: Chip) -> int | np.ndarray:
    """Independent instruction streams of one program on an SM: its warps spread over
    the SM's sub-partitions, one tensor core each (a Hopper warpgroup is one stream).
    While one stream waits on its softmax, another's MMAs keep the tensor cores busy.
    One number for the trace, or one per program where its kernels' warps differ."""
    per_kernel = [res.mma_streams or max(1, res.warps // chip.matrix.units_per_core)
                  for res in trace.resources_by_kernel]
    if len(set(per_kernel)) == 1:
        return per_kernel[0]
    return np.asarray(per_kernel)[kernel_index(trace)]


def _at(values: int | np.ndarray, rows: np.ndarray) -> int | np.ndarray:
    """``values`` (one number, or one per program as :func:`instruction_streams` gives
    them) at ``rows``."""
    return values if np.isscalar(values) else values[rows]


def _kernel_runs(trace: KernelTrace, costs: ProgramCosts, *more: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`_program_runs`, split where a kernel with resources of its own begins (its
    programs' instruction streams and residents differ from the kernel before)."""
    if trace.kernel.kernel_resources is not None:
        more = (*more, kernel_index(trace))
    return _program_runs(costs, *more)


def gpu_program_times(chip: Chip, costs: ProgramCosts, hits: np.ndarray, depth: int, streams: int = 1, *,
                      queue_s: float = 0.0) -> ProgramTimes:
    """Per-program seconds on an SM. Matrix and vector units are separate pipes: the
    SM's busiest unit bounds throughput, and one program's own matrix and vector work
    overlap only across its ``streams`` (:func:`instruction_streams`). ``queue_s`` is
    the HBM queueing delay (:func:`hbm_queueing_s`): a read from HBM waits it on top of
    the latency (stores do not wait: a program retires with its stores in flight)."""
    clock = chip.clock_hz
    compute = costs.matrix_s + costs.vector_s
    local_bandwidth = chip.local.bandwidth_bytes_per_cycle * clock
    local = costs.local_bytes / local_bandwidth
    global_bytes = costs.read_bytes + costs.write_bytes + costs.pinned_bytes
    port_bandwidth = chip.local.fill_bandwidth_bytes_per_cycle * clock
    port = global_bytes / port_bandwidth
    hit_fraction = np.divide(hits, costs.read_bytes, out=np.zeros_like(hits), where=costs.read_bytes > 0)
    cache_latency = chip.shared_cache.latency_s if chip.shared_cache else chip.hbm.latency_s
    latency = hit_fraction * cache_latency + (1 - hit_fraction) * (chip.hbm.latency_s + queue_s)
    reads = costs.read_iterations
    latency = np.where(reads > 0, latency, 0.0)
    # on an idle chip the first load finds no queue
    startup = np.where(reads > 0, latency - (1 - hit_fraction) * queue_s, 0.0) + chip.program_overhead_s
    if depth <= 1:
        # no overlap: each read waits its latency, then transfer and compute in turn
        return ProgramTimes(reads * latency + chip.program_overhead_s, compute + np.maximum(port, local),
                            np.zeros_like(port), np.zeros_like(port), True, startup)
    # Pipeline fill and drain: the first loads (after one latency) and the last stores
    # move at the core's port bandwidth with nothing to overlap them. In between, later
    # loads overlap compute while `depth - 1` are in flight (Little's law).
    edge_bytes = costs.fill_bytes + costs.drain_bytes
    in_flight = depth - 1
    return ProgramTimes(
        exposed=latency + edge_bytes / min(port_bandwidth, local_bandwidth) + chip.program_overhead_s,
        sm=np.maximum.reduce([
            costs.matrix_s, costs.vector_s,
            (costs.local_bytes - edge_bytes) / local_bandwidth, (global_bytes - edge_bytes) / port_bandwidth,
        ]),
        chain=(compute - costs.overlapped_s) / streams,
        latency_bound=np.maximum(reads - 1, 0) * latency / in_flight,
        serial=False,
        startup=startup,
    )


QUEUE_SAMPLE = 4096
"""Programs (evenly spaced in launch order) whose mean time sets the kernel's HBM load."""


def hbm_queueing_s(chip: Chip, costs: ProgramCosts, hits: np.ndarray, depth: int, streams: int | np.ndarray,
                   per_core: int,
                   totals: dict[str, float], caps: dict[str, float], mix: float) -> float:
    """The HBM queueing delay a kernel runs at: the fixed point of ``q = Q m u(q)^2``, with
    ``Q`` the chip's ``hbm.queueing_latency``, ``m`` the ``mix`` of its HBM traffic
    (:meth:`~accelsim.arch.model.MemoryLevel.queueing_mix`: loads wait behind the bus's
    turns between reads and writes, so read-only and write-only traffic queue only by
    ``hbm.queueing_unmixed_share``) and
    ``u(q)`` the HBM utilization of the kernel's steady state when every HBM access waits
    ``q`` more: its resident programs finish at ``resident / mean program time`` per
    second (Little's law), no faster than its busiest shared resource allows, and each
    moves the mean HBM bytes (the mean time over :data:`QUEUE_SAMPLE` programs spread
    over the launch; program times are linear in ``q`` before the maximum in
    :meth:`ProgramTimes.seconds`). One delay for the whole kernel: a steady-state model,
    not a per-moment one."""
    n = costs.num_programs
    most = chip.hbm.queueing_latency_s * mix
    if not totals.get("hbm") or n == 0 or most <= 0:
        return 0.0
    sample = np.unique(np.linspace(0, n - 1, min(n, QUEUE_SAMPLE)).round().astype(np.int64))
    some = costs.take(sample)
    streams = _at(streams, sample)
    unloaded = gpu_program_times(chip, some, hits[sample], depth, streams)
    per_second = gpu_program_times(chip, some, hits[sample], depth, streams, queue_s=1.0)
    residents = min(per_core, math.ceil(n / chip.num_cores))
    concurrent = min(n, chip.num_cores * per_core)
    exposed = unloaded.exposed
    exposed_per_s = per_second.exposed - exposed
    fixed = residents * unloaded.sm
    if not unloaded.serial:
        chain = unloaded.chain
        bound = unloaded.latency_bound
        bound_per_s = per_second.latency_bound - bound
    resource_rate = min((caps[r] * n / total for r, total in totals.items() if total > 0 and r in caps),
                        default=math.inf)
    bytes_per_program = totals["hbm"] / n

    def excess(q: float) -> float:
        if unloaded.serial:
            seconds = exposed + q * exposed_per_s + fixed
        else:
            seconds = exposed + q * exposed_per_s + np.maximum.reduce([fixed, chain, bound + q * bound_per_s])
        rate = min(concurrent / float(seconds.mean()), resource_rate)
        u = min(1.0, rate * bytes_per_program / caps["hbm"])
        return most * u * u - q

    low, high = 0.0, most
    if excess(high) >= 0:
        return high
    for _ in range(40):  # excess falls as q grows: bisection
        middle = 0.5 * (low + high)
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    return 0.5 * (low + high)


COHORT_BUCKETS_PER_OCTAVE = 8
"""Programs started together join one cohort if they share a template and their
iteration counts round to the same 1/8-octave bucket (within ~9%). Bytes and flops
stay exact (a cohort's demand is its members' sum); only finishing times within a
cohort are averaged. This keeps causal attention at a few events per wave."""


def _cohort_keys(costs: ProgramCosts) -> np.ndarray:
    bucket = np.round(np.log2(np.maximum(costs.iterations, 1.0)) * COHORT_BUCKETS_PER_OCTAVE).astype(np.int64)
    return costs.template * (int(bucket.max()) + 1) + bucket


def _groups(keys: np.ndarray) -> list[np.ndarray]:
    """Index arrays of equal keys, sorted by key."""
    if len(keys) == 1 or keys.min() == keys.max():  # one group, the common case of even kernels
        return [np.arange(len(keys))]
    order = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(np.diff(keys[order])) + 1
    return np.split(order, bounds)


SMALL_BATCH = 16
"""Batches up to this many programs are placed one by one (kernels whose programs finish
one at a time, such as causal attention, dispatch one or two at a time)."""


class CoreSlots:
    """Which SM each program runs on: the block scheduler puts a new program on the SM
    with the fewest residents (lowest index first). A program's speed depends on how
    many programs share its SM when it starts."""

    def __init__(self, cores: int) -> None:
        self.resident = np.zeros(cores, dtype=np.int64)

    def place(self, count: int) -> np.ndarray:
        """The cores of ``count`` programs placed one after another. Placing one at a time
        on the least-loaded core takes the (load, core) pairs above each core's residents in
        ascending order, so the whole batch is the ``count`` smallest such pairs."""
        resident = self.resident
        if count <= SMALL_BATCH:  # one at a time is cheaper than the batch's sort
            placed = np.empty(count, dtype=np.int64)
            for i in range(count):
                placed[i] = core = int(resident.argmin())
                resident[core] += 1
            return placed
        top, most = int(resident.min()), int(resident.max())
        if top == most:  # every core equally loaded (an even kernel's waves): round robin
            resident += count // len(resident)
            resident[:count % len(resident)] += 1
            return np.arange(count) % len(resident)
        high = most + -(-count // len(resident))
        while top < high:  # the lowest level whose pairs number at least count
            mid = (top + high) // 2
            if int(np.maximum(mid - resident + 1, 0).sum()) >= count:
                high = mid
            else:
                top = mid + 1
        levels_per_core = np.maximum(top - resident + 1, 0)
        core = np.repeat(np.arange(len(resident)), levels_per_core)
        starts = np.cumsum(levels_per_core) - levels_per_core
        level = resident[core] + np.arange(len(core)) - np.repeat(starts, levels_per_core)
        placed = core[np.lexsort((core, level))[:count]]
        resident += np.bincount(placed, minlength=len(resident))
        return placed

    def release(self, cores: np.ndarray) -> None:
        if len(cores) == 1:  # one program, the common case: no unbuffered ufunc needed
            self.resident[cores[0]] -= 1
        else:
            np.subtract.at(self.resident, cores, 1)


@dataclass(frozen=True)
class _Replayed:
    """What a GPU replay leaves for the result (the pool's ``used`` and ``events``)."""

    used: dict[str, float]
    events: int
    body_ps: int
    kernel_ends_ps: tuple[int, ...] = ()


ReplayMemo = dict[bytes, _Replayed]
"""Replays already made, by everything they depend on (:func:`_replay_key`): configs of
one search often differ only where the engine cannot see it (a pipeline depth that does
not bind, say), and a deterministic replay of equal inputs gives equal outputs."""


def _replay_key(chip: Chip, per_cores: list[int], resources: list[str], caps: dict[str, float],
                times: ProgramTimes, demand_rows: np.ndarray, group_key: np.ndarray,
                kernel_starts: list[int] | None = None, run_starts: np.ndarray | None = None,
                programs: int = 0) -> bytes:
    """Everything a replay depends on; ``run_starts``: where each run of identical programs
    begins, when the other arrays are per run rather than per program (whose count,
    ``programs``, the arrays then do not give)."""
    digest = hashlib.blake2b(digest_size=32)
    digest.update(repr((chip.num_cores, per_cores, resources, [caps[r] for r in resources],
                        times.serial, demand_rows.shape, kernel_starts, run_starts is None, programs)).encode())
    if run_starts is not None:
        digest.update(np.ascontiguousarray(run_starts).tobytes())
    # A replay sees a program's times only through ProgramTimes.seconds, which depends on
    # the chain and latency terms only through their maximum (a pipeline depth that does
    # not bind leaves it alone).
    parts = [times.exposed, times.sm, times.startup]
    if not times.serial:
        parts.append(np.maximum(times.chain, times.latency_bound))
    for array in (*parts, demand_rows, group_key):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


def shared_cache_hits(trace: KernelTrace, chip: Chip) -> np.ndarray | None:
    """Per program, two rows (None on a TPU): bytes of its HBM-level reads that the GPU's
    shared cache (L2) serves, and bytes of its writes the L2 absorbs (written again
    before leaving it, :func:`~accelsim.engine.reuse.absorbed_write_bytes`): the reuse
    model at the kernel's concurrency, as a replay uses it. A search computes it once per
    config for both its bound and its replay."""
    if chip.family == "tpu":
        return None
    if chip.shared_cache is None:
        return np.zeros((2, trace.num_programs))
    window = {"concurrency": [chip.num_cores * per_core for per_core, _ in gpu_occupancies(trace, chip)],
              "capacity_bytes": chip.shared_cache.capacity_bytes}
    return np.stack([cache_hit_bytes(trace, **window), absorbed_write_bytes(trace, **window)])


def _simulate_gpu(trace: KernelTrace, chip: Chip, timeline: bool, memo: ReplayMemo | None = None,
                  hits: np.ndarray | None = None, costs: ProgramCosts | None = None) -> KernelSimulation:
    if costs is None:
        costs = program_costs(trace, chip)
    occupancies = gpu_occupancies(trace, chip)
    per_cores = [per_core for per_core, _ in occupancies]  # per kernel: the SM slots change at its start
    most = max(per_cores)
    if hits is None:
        hits = shared_cache_hits(trace, chip)
    hits, absorbed = hits
    hbm_reads, hbm_writes = costs.read_bytes - hits, costs.write_bytes - absorbed
    hbm = hbm_reads + hbm_writes
    hbm_read_total, hbm_write_total = float(hbm_reads.sum()), float(hbm_writes.sum())
    caps = _capacities(chip, chip.num_cores, 1.0, hbm_read_total, hbm_write_total)
    # Programs in runs of identical ones (an even kernel is one or two runs) are timed once
    # per run: `run_of` maps a launch position to its run (None: every program its own).
    starts, run_of = _kernel_runs(trace, costs, hits, absorbed)
    ran, run_hits, run_hbm = (costs, hits, hbm) if run_of is None else (costs.take(starts), hits[starts], hbm[starts])
    demand = _demand_columns(ran, run_hbm, "shared_cache" in caps)
    resources = list(demand)
    demand_rows = np.stack([demand[r] for r in resources], axis=1)  # runs x resources
    depth, streams = trace.kernel.pipeline_depth, instruction_streams(trace, chip)
    barriers = trace.kernel.kernel_starts or []
    queue = 0.0
    if chip.hbm.queueing_latency_s:
        columns = demand if run_of is None else _demand_columns(costs, hbm, "shared_cache" in caps)
        totals = {r: float(column.sum()) for r, column in columns.items()}
        mix = chip.hbm.queueing_mix(hbm_read_total, hbm_write_total)
        # one delay for the trace: at the residents of the kernel that moves the most HBM bytes
        busiest = int(np.argmax(np.add.reduceat(hbm, [0, *barriers]))) if len(per_cores) > 1 else 0
        queue = hbm_queueing_s(chip, costs, hits, depth, streams, per_cores[busiest], totals, caps, mix)
    times = gpu_program_times(chip, ran, run_hits, depth, _at(streams, starts), queue_s=queue)
    group_key = _cohort_keys(ran)
    read = float(costs.read_bytes.sum())
    specific = {
        "shared_cache_hit_rate": float(hits.sum() / read) if read else None,
        "hbm_queueing_s": queue if chip.hbm.queueing_latency_s else None,
    }
    key = None
    if memo is not None and not timeline:
        key = _replay_key(chip, per_cores, resources, caps, times, demand_rows, group_key, trace.kernel.kernel_starts,
                          starts if run_of is not None else None, costs.num_programs)
        if key in memo:
            done = memo[key]
            per_kernel_s = _kernel_seconds(done.kernel_ends_ps)
            return _result(trace, chip, costs, done, caps, done.body_ps, hbm, segments=[], counters=[],
                           per_kernel_s=per_kernel_s, **_occupancy_summary(trace, occupancies, per_kernel_s), **specific)

    env, pool, segments, counters = _replay(caps, timeline)
    state = {"next": 0, "free": chip.num_cores * per_cores[0], "slots": chip.num_cores * per_cores[0], "gate": 0}
    n = costs.num_programs
    cores = CoreSlots(chip.num_cores)
    kernel_firsts = {0, *barriers}
    kernel_ends: list[int] = []  # when each kernel but the last ended

    def limit() -> int:
        """The launch position dispatch may not pass now: the next kernel's start, until
        every program before it has finished (then the SMs take that kernel's residents)."""
        while (state["gate"] < len(barriers) and state["next"] >= barriers[state["gate"]]
               and state["free"] == state["slots"]):
            state["gate"] += 1
            kernel_ends.append(env.now)
            state["free"] = state["slots"] = chip.num_cores * per_cores[state["gate"]]
        return barriers[state["gate"]] if state["gate"] < len(barriers) else n

    # A program runs at the pace its SM's residents allow *now*: when a neighbour finishes
    # with nothing to take its place (a kernel's tail, before a barrier), or a newcomer
    # joins a core that had room, the flows on that core are re-rated.
    rerate = most > 1
    on_core: list[dict[Flow, None]] = [{} for _ in range(chip.num_cores)] if rerate else []
    """Per core, the flows with programs on it."""
    paced: dict[Flow, list] = {}  # flow -> [its rows, each member's seconds now, their sum, startup waited]
    placed: list[np.ndarray] = []

    def cores_of(flow: Flow) -> list[int]:
        tag = flow.tag
        return [int(tag[0])] if len(tag) == 1 else np.unique(tag).tolist()

    def track(flow: Flow, rows: np.ndarray, seconds: np.ndarray, waited: float = 0.0) -> None:
        paced[flow] = [rows, seconds, float(seconds.sum()), waited]
        for core in cores_of(flow):
            on_core[core][flow] = None

    def rerate_cores(released: np.ndarray) -> None:
        """New paces for the flows with programs on cores whose residents changed: those
        that lost ``released`` programs and gained other than as many from this dispatch.
        Only the members on those cores are timed again."""
        if len(released) == 1 and len(placed) == 1 and len(placed[0]) == 1:
            if placed[0][0] == released[0]:
                return  # one program ended, one started on its SM: the steady state of uneven kernels
        gained = np.concatenate(placed) if placed else released[:0]
        if len(gained) == len(released) and np.array_equal(np.sort(gained), np.sort(released)):
            return  # every freed slot refilled on its own SM: the steady state
        change = np.bincount(gained, minlength=chip.num_cores) - np.bincount(released, minlength=chip.num_cores)
        touched: dict[Flow, None] = {}
        for core in np.flatnonzero(change).tolist():
            residents = int(cores.resident[core])
            for flow in on_core[core]:
                if flow.finished_ps is not None:  # ended in this same instant; its callback is next
                    continue
                state_of = paced[flow]
                if flow.count == 1:  # one program: in Python scalars (the same arithmetic)
                    if not single:
                        single.append(times.as_lists())
                    state_of[2] = single[0].seconds(int(state_of[0][0]), residents)
                else:
                    members = np.flatnonzero(flow.tag == core)
                    now = times.seconds(state_of[0][members], residents)
                    state_of[2] += float(now.sum() - state_of[1][members].sum())
                    state_of[1][members] = now
                touched[flow] = None
        flows, paces = [], []
        for flow in touched:
            rows, seconds, total, waited = paced[flow]
            pace = 1.0 / _after_startup(total / len(rows), waited)
            if pace == flow.max_rate:
                continue
            if flow.slot < 0:  # still waiting the kernel's start: it starts at this pace
                flow.max_rate = pace
            else:
                flows.append(flow)
                paces.append(pace)
        pool.set_max_rates(flows, paces)

    def finished(flow: Flow) -> None:
        state["free"] += flow.count
        cores.release(flow.tag)
        if rerate:
            for core in cores_of(flow):
                del on_core[core][flow]
            del paced[flow]
            placed.clear()
        if timeline:
            first, last = int(flow.tag.min()), int(flow.tag.max())
            segments.append(Segment(
                f"SMs {first}-{last}" if first != last else f"SM {first}", flow.name,
                flow.started_ps, flow.finished_ps, {"programs": flow.count},
            ))
        if wave and state["free"] == state["slots"] and state["next"] == wave["first"] + state["slots"]:
            skip = repeats()
            if skip:  # the pool is idle: nothing to re-rate
                env.timeout(skip).callbacks.append(lambda _e: dispatch())
                return
        dispatch()
        if rerate:
            rerate_cores(flow.tag)

    # Fast-forward (not for timelines): an even kernel runs one wave after another, each a
    # whole wave of identical programs started on an idle pool and finished before the
    # next starts. Every such wave takes the same whole picoseconds and serves the same
    # demand, so once one has run, the identical whole waves after it are added at once.
    wave: dict = {}  # the last wave started on an idle pool: first program, ps, used, events
    boundaries: list[np.ndarray] = []  # made on the first wave that ends alone

    def repeats() -> int:
        """Picoseconds of the identical whole waves that follow the one just ended (0 if
        none), with their demand and events booked and dispatch moved past them."""
        if not boundaries:
            changes = _identity_boundaries(times, demand_rows, group_key)  # in runs (or programs)
            # a kernel's start is a boundary too: its first wave waits its startup
            boundaries.append(np.union1d(changes if run_of is None else starts[changes], barriers))
        bounds = boundaries[0]
        after = int(np.searchsorted(bounds, wave["first"], side="right"))  # the run holding the wave ends there
        run_end = int(bounds[after]) if after < len(bounds) else n
        k = (min(run_end, limit()) - state["next"]) // state["slots"]
        if k < 1:
            return 0
        period = env.now - wave["ps"]
        pool.book(k * (pool.used_array() - wave["used"]), k * (pool.events - wave["events"]))
        state["next"] += k * state["slots"]
        wave.clear()
        return k * period

    def dispatch() -> None:
        end = limit()  # first: at a kernel's start it sets that kernel's slots
        take = min(state["free"], end - state["next"])
        if take <= 0:
            return
        # A kernel's first programs start on an idle chip: nothing moves data until the
        # first of them has paid its overhead and its first load's latency, so that much
        # (the least startup among them) is waited before any flow starts. Later programs
        # start among running ones, whose transfers hide their startup.
        slots = state["slots"]
        first = state["free"] == slots and state["next"] in kernel_firsts
        if take == 1 and not first:  # one program finished, one starts: the common case of uneven kernels
            dispatch_one()
            return
        wave.clear()
        if (FAST_FORWARD_WAVES and not timeline and not first and take == slots
                and n - state["next"] >= 2 * slots):
            wave.update(first=state["next"], ps=env.now, used=pool.used_array(), events=pool.events)
        members = np.arange(state["next"], state["next"] + take)
        rows = members if run_of is None else run_of[members]
        state["next"] += take
        state["free"] -= take
        core_of = cores.place(take)
        residents = cores.resident[core_of]
        keys = group_key[rows] * (most + 1) + residents
        seconds = times.seconds(rows, residents)
        waited_ps = round(float(times.startup[rows].min()) * PS_PER_S) if first else 0
        waited = _seconds(waited_ps)
        flows = []
        for chosen in _groups(keys):
            ids = members[chosen]
            flows.append(Flow(
                name=f"programs {ids[0]}..{ids[-1]}" if len(ids) > 1 else f"program {ids[0]}",
                demand=dict(zip(resources, demand_rows[rows[chosen]].sum(axis=0).tolist())),
                max_rate=1.0 / _after_startup(float(seconds[chosen].mean()), waited),
                on_done=finished,
                count=len(ids),
                tag=core_of[chosen],
            ))
            if rerate:
                track(flows[-1], rows[chosen], seconds[chosen].copy(), waited)
        if rerate:
            placed.append(core_of)
        if waited_ps:
            if timeline:
                segments.append(Segment("kernel start", "startup: program overhead + first load's latency",
                                        env.now, env.now + waited_ps, {"programs": take}))
            env.timeout(waited_ps).callbacks.append(lambda _e: pool.start_many(flows))
        else:
            pool.start_many(flows)

    single: list[_ProgramTimeLists] = []  # made on the first program dispatched alone

    def dispatch_one() -> None:
        """``dispatch`` for one program, in Python scalars (the same arithmetic)."""
        if not single:
            single.append(times.as_lists())
        i = state["next"]
        row = i if run_of is None else int(run_of[i])
        state["next"] += 1
        state["free"] -= 1
        core_of = cores.place(1)
        residents = int(cores.resident[core_of[0]])
        seconds = single[0].seconds(row, residents)
        flow = Flow(
            name=f"program {i}",
            demand=dict(zip(resources, demand_rows[row].tolist())),
            max_rate=1.0 / seconds,
            on_done=finished,
            count=1,
            tag=core_of,
        )
        if rerate:
            track(flow, np.array([row]), np.array([seconds]))
            placed.append(core_of)
        pool.start_many([flow])

    dispatch()
    env.run()
    ends = [*kernel_ends, env.now]
    if key is not None:
        memo[key] = _Replayed(pool.used, pool.events, env.now, tuple(ends))
    per_kernel_s = _kernel_seconds(ends)
    return _result(trace, chip, costs, pool, caps, env.now, hbm, segments=segments, counters=counters,
                   per_kernel_s=per_kernel_s, **_occupancy_summary(trace, occupancies, per_kernel_s), **specific)


def _occupancy_summary(trace: KernelTrace, occupancies: list[tuple[int, str]], per_kernel_s: list[float]) -> dict:
    """``programs_per_core``, ``occupancy_limit`` and ``local_memory_bytes`` of a replay: those
    of its longest kernel (the only one, or the one that sets most of the time)."""
    longest = int(np.argmax(per_kernel_s)) if len(occupancies) > 1 else 0
    per_core, limit = occupancies[longest]
    return {"programs_per_core": per_core, "occupancy_limit": limit,
            "local_memory_bytes": trace.resources_by_kernel[longest].local_memory_bytes}


def _after_startup(seconds: float, waited: float) -> float:
    """A program's time left once ``waited`` seconds of its startup have passed (never
    zero: a rate is its inverse)."""
    return max(seconds - waited, seconds * 1e-9)


def _demand_columns(costs: ProgramCosts, hbm: np.ndarray, shared_cache: bool) -> dict[str, np.ndarray]:
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


RUNS_FROM = 4096
"""Kernels with at least this many programs are timed per run of identical programs."""


def _change_points(columns) -> np.ndarray:
    """Positions (ascending, 0 excluded) where any of the equally long 1-D ``columns``
    differs from the position before."""
    differs = None
    for column in columns:
        changed = column[1:] != column[:-1]
        differs = changed if differs is None else differs | changed
    return np.flatnonzero(differs) + 1


def _program_runs(costs: ProgramCosts, *more: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Runs of identical programs: launch positions where a program differs from the one
    before it in its costs or in any of the per-program arrays ``more`` (for a replay:
    its L2 read hits and absorbed writes), 0 first, and each program's run. ``(every
    position, None)`` when there are few programs or the runs would be short."""
    n = costs.num_programs
    if n >= RUNS_FROM:
        starts = np.concatenate([[0], _change_points([*(getattr(costs, f.name) for f in fields(ProgramCosts)), *more])])
        if len(starts) <= n // 4:
            return starts, np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    return np.arange(n), None


FAST_FORWARD_WAVES = True
"""Add identical whole waves of a GPU kernel at once instead of replaying each (the same
results: see ``_simulate_gpu``); off replays every wave, for checks and profiling."""


def _identity_boundaries(times: ProgramTimes, demand_rows: np.ndarray, group_key: np.ndarray) -> np.ndarray:
    """Indices where a program differs from the one before it in anything a replay sees
    (its demand, cohort and times), ascending: runs of identical programs lie between."""
    columns = [*demand_rows.T, times.exposed, times.sm, group_key]
    if not times.serial:
        columns.append(np.maximum(times.chain, times.latency_bound))
    return _change_points(columns)


# ---------------------------------------------------------------- TPU


def tpu_core_assignment(trace: KernelTrace, chip: Chip) -> tuple[np.ndarray, int]:
    """Which TensorCore runs each program, and how many cores the kernel uses."""
    n = trace.num_programs
    semantics = trace.kernel.dimension_semantics or []
    if not chip.megacore or chip.num_cores < 2 or "parallel" not in semantics:
        return np.zeros(n, dtype=np.int64), 1
    axis = semantics.index("parallel")
    size = trace.kernel.grid[axis]
    cores = min(chip.num_cores, size)
    coordinate = grid_coordinate(trace, axis)
    return (coordinate * cores) // size, cores


def _tpu_capacities(chip: Chip, cores: int, costs: ProgramCosts) -> dict[str, float]:
    """Capacities for a kernel on ``cores`` TensorCores: a TensorCore that is its own
    device (not megacore) sees its share of the chip's HBM."""
    return _capacities(chip, cores, 1.0 if chip.megacore else 1.0 / chip.num_cores,
                       float(costs.read_bytes.sum()), float(costs.write_bytes.sum()))


def _simulate_tpu(trace: KernelTrace, chip: Chip, timeline: bool, costs: ProgramCosts | None = None) -> KernelSimulation:
    costs = costs if costs is not None else program_costs(trace, chip)
    for i, res in enumerate(trace.resources_by_kernel):
        if res.local_memory_bytes > chip.local.capacity_bytes:
            raise InputError(
                f"a program needs {res.local_memory_bytes} bytes of VMEM; {chip.name} has {int(chip.local.capacity_bytes)}",
                field=f"{_resources_field(i)}.local_memory_bytes",
            )
    core_of, cores = tpu_core_assignment(trace, chip)
    caps = _tpu_capacities(chip, cores, costs)
    clock = chip.clock_hz
    copy_bw = min(chip.local.fill_bandwidth_bytes_per_cycle * clock, caps["hbm"])
    compute = np.maximum(costs.matrix_s + costs.vector_s, costs.local_bytes / (chip.local.bandwidth_bytes_per_cycle * clock))
    hbm = costs.read_bytes + costs.write_bytes
    copy = hbm / copy_bw

    env, pool, segments, counters = _replay(caps, timeline)
    kernel_of = kernel_index(trace)
    kernels = int(kernel_of.max()) + 1 if kernel_of.size else 1
    double_buffered = trace.kernel.pipeline_depth > 1
    waves: list[list[Flow]] = [[] for _ in range(kernels)]  # per kernel of the trace, a flow per core
    for core in range(cores):
        mine = np.nonzero(core_of == core)[0]
        if mine.size == 0:
            continue
        # The copies for grid step i+1 run during step i (with two or more buffers; with
        # one, pipeline_depth 1, they wait for it): the DMA engines move them while the
        # core pays the step's fixed overhead and computes, so a step takes the longer of
        # the two. Step 0's copies (and one latency) come first. Each kernel of the trace
        # starts its pipeline anew on every core: its first copies wait, and the kernel
        # before drains its last writes.
        first = np.ones(mine.size, dtype=bool)
        first[1:] = kernel_of[mine][1:] != kernel_of[mine][:-1]
        last = np.append(first[1:], True)
        next_copy = np.where(last, 0.0, np.append(copy[mine][1:], 0.0))
        busy = compute[mine] + chip.program_overhead_s
        steps = np.maximum(busy, next_copy) if double_buffered else busy + next_copy
        seconds = (steps + np.where(first, copy[mine] + chip.hbm.latency_s, 0.0)
                   + np.where(last, costs.drain_bytes[mine] / copy_bw, 0.0))
        for k in np.unique(kernel_of[mine]).tolist():
            ours = kernel_of[mine] == k
            rows = mine[ours]
            waves[k].append(Flow(
                name=f"TensorCore {core}" + (f", kernel {k}" if kernels > 1 else ""),
                demand={"matrix": float(costs.matrix_s[rows].sum()),
                        "vector": float(costs.vector_s[rows].sum()),
                        "local_memory": float(costs.local_bytes[rows].sum()),
                        "port": float(hbm[rows].sum()),
                        "hbm": float(hbm[rows].sum())},
                max_rate=1.0 / float(seconds[ours].sum()),
                count=int(rows.size),
                tag=core,
            ))
    # A kernel starts when the one before has finished on every core (a pallas_call after
    # another), so the kernels' times are the replay's own.
    ends: list[int] = []
    pending = [0]

    def start(k: int) -> None:
        while k < kernels and not waves[k]:
            ends.append(env.now)  # a kernel with no programs takes no time
            k += 1
        if k == kernels:
            return
        pending[0] = len(waves[k])
        for flow in waves[k]:
            flow.on_done = lambda f, k=k: done(f, k)
        pool.start_many(waves[k])

    def done(flow: Flow, k: int) -> None:
        if timeline:
            segments.append(Segment(f"TensorCore {flow.tag}", f"{flow.count} grid steps" + (
                f" (kernel {k})" if kernels > 1 else ""), flow.started_ps, flow.finished_ps, {"programs": flow.count}))
        pending[0] -= 1
        if pending[0] == 0:
            ends.append(env.now)
            start(k + 1)

    start(0)
    env.run()
    return _result(
        trace, chip, costs, pool, caps, env.now, hbm,
        per_kernel_s=_kernel_seconds(ends),
        programs_per_core=1,
        occupancy_limit="sequential grid",
        shared_cache_hit_rate=None,
        segments=segments,
        counters=counters,
    )


def latency_lower_bound_s(trace: KernelTrace, chip: Chip, hits: np.ndarray | None = None, *,
                          costs: ProgramCosts | None = None) -> float:
    """A cheap bound that :func:`simulate_kernel` never goes below, for pruning searches:
    every resource's total demand at its full capacity, and (GPU) bounds on programs
    alone on an SM: the slowest cohort key's fastest program, every program's time alone
    over the SMs' program slots, and the last programs' starts (:func:`_last_starts_bound`).
    Without ``hits`` (:func:`shared_cache_hits`: read hits and absorbed writes) every
    read is taken at the nearer level's latency and HBM is left out; with them, HBM bytes
    and latencies are the replay's own.

    The slot bound holds because a replayed program never runs faster than alone (more
    residents and contention only slow it; a cohort takes its members' mean time, so
    its slot-time is their sum) and an SM holds at most ``per_core`` programs at once.
    Costs one per-program accounting pass (no replay, no reuse model), none if ``costs``
    (:func:`program_costs` of this trace on this chip) are given."""
    if costs is None:
        costs = program_costs(trace, chip)
    if chip.family == "tpu":
        caps = _tpu_capacities(chip, tpu_core_assignment(trace, chip)[1], costs)
        hbm = costs.read_bytes + costs.write_bytes
        totals = {"matrix": costs.matrix_s.sum(), "vector": costs.vector_s.sum(), "hbm": hbm.sum()}
        return max(float(v) / caps[k] for k, v in totals.items()) + launch_s(trace, chip)
    per_core = max(per_core for per_core, _ in gpu_occupancies(trace, chip))  # raises if a kernel does not fit
    moved = costs.read_bytes + costs.write_bytes + costs.pinned_bytes
    totals = {"matrix": costs.matrix_s.sum(), "vector": costs.vector_s.sum(),
              "local_memory": costs.local_bytes.sum(), "port": moved.sum()}
    reads = writes = 0.0
    if hits is not None:
        hits, absorbed = hits
        reads, writes = float((costs.read_bytes - hits).sum()), float((costs.write_bytes - absorbed).sum())
        totals["hbm"] = reads + writes
    caps = _capacities(chip, chip.num_cores, 1.0, reads, writes)
    if "shared_cache" in caps:
        totals["shared_cache"] = costs.cache_bytes.sum()
    if hits is None:
        cache_nearer = chip.shared_cache is not None and chip.shared_cache.latency_s <= chip.hbm.latency_s
        hits = costs.read_bytes if cache_nearer else np.zeros_like(costs.read_bytes)
    bound = max(float(v) / caps[k] for k, v in totals.items())
    # timed once per run of identical programs (the same numbers as timing each)
    starts, run_of = _kernel_runs(trace, costs, hits)
    ran, run_hits = (costs, hits) if run_of is None else (costs.take(starts), hits[starts])
    times = gpu_program_times(chip, ran, run_hits, trace.kernel.pipeline_depth,
                              _at(instruction_streams(trace, chip), starts))
    alone = times.seconds(np.arange(ran.num_programs))
    # a cohort runs at its members' mean speed, so only each key's fastest member is safe
    floor = np.empty(ran.num_programs)
    for members in _groups(_cohort_keys(ran)):
        floor[members] = alone[members].min()
    if run_of is not None:
        alone, floor = alone[run_of], floor[run_of]
    slots = chip.num_cores * per_core
    return max(bound, float(floor.max()), float(alone.sum()) / slots,
               _last_starts_bound(alone, floor, slots)) + launch_s(trace, chip)


LAST_STARTS_CHECKED = 8


def _last_starts_bound(alone: np.ndarray, floor: np.ndarray, slots: int) -> float:
    """Programs start in launch order as slots free up, so program ``k`` (``k >= slots``)
    starts only once ``k - slots + 1`` earlier programs have finished; finished programs
    are whole cohorts, whose slot-time is at least their members' times alone, and at
    most ``slots`` programs run at once, so that start is no earlier than the sum of the
    ``k - slots + 1`` smallest earlier times alone over ``slots``. Program ``k`` then runs
    at least ``floor[k]``, its cohort key's fastest time alone. Checked for the last
    program and the slowest few of the last ``slots``: the tail a final partial wave leaves."""
    n = len(alone)
    if n <= slots:
        return 0.0
    window = np.arange(slots, n)[-slots:]
    slowest = window[np.argsort(-floor[window], kind="stable")[:LAST_STARTS_CHECKED]]
    best = 0.0
    for k in sorted({int(n - 1), *slowest.tolist()}):
        earlier = alone[:k]  # with one slot, every earlier program: summed in launch order
        finished = np.partition(earlier, k - slots)[:k - slots + 1] if slots > 1 else earlier
        best = max(best, float(finished.sum()) / slots + float(floor[k]))
    return best


def check_hbm_capacity(trace: KernelTrace, chip: Chip) -> None:
    """Refuse a kernel whose tensors do not fit in the chip's HBM: its latency would answer
    a question the chip cannot be asked (``--set hbm.capacity=...`` makes it a what-if)."""
    need = sum(math.prod(t.shape) * DTYPE_BYTES[t.dtype] for t in trace.tensors.values())
    if need > chip.hbm.capacity_bytes:
        raise InputError(f"the kernel's tensors take {need / 1e9:.4g} GB; {chip.name} has "
                         f"{chip.hbm.capacity_bytes / 1e9:.4g} GB of HBM (for a what-if, --set hbm.capacity=...)",
                         field="tensors")


def simulate_kernel(trace: KernelTrace, chip: Chip, *, timeline: bool = False,
                    replays: ReplayMemo | None = None, hits: np.ndarray | None = None,
                    costs: ProgramCosts | None = None) -> KernelSimulation:
    """Predict the latency of one kernel trace on one chip (with the chip's values for the
    trace's kernel family, where its config scopes some to families). ``replays``: a memo
    shared by the calls of one search, so a GPU replay whose inputs equal an earlier
    one's is not made again (the results are identical either way). ``hits`` and
    ``costs``: the trace's :func:`shared_cache_hits` (GPU only) and :func:`program_costs`
    on this chip (as scoped to the trace's family), if already computed."""
    chip = chip.for_family(trace.metadata.get("family"))
    check_hbm_capacity(trace, chip)
    started = time.perf_counter()
    if chip.family == "tpu":
        result = _simulate_tpu(trace, chip, timeline, costs)
    else:
        check_gpu_grid(trace, chip.name)
        result = _simulate_gpu(trace, chip, timeline, replays, hits, costs)
    result.sim_wall_s = time.perf_counter() - started
    return result
