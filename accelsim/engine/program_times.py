"""A GPU program's time on an SM, split so that co-resident programs can share it
(:class:`ProgramTimes`), and the HBM queueing delay a kernel runs at."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from accelsim.arch.model import Chip
from accelsim.engine.programs import ProgramCosts, kernel_index
from accelsim.trace.kernel import KernelTrace

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
    nothing else running, so it holds up the whole chip (:mod:`accelsim.engine.gpu`)."""
    requests: np.ndarray
    """Seconds the program's loads fill its SM's miss tracking (:func:`miss_tracking_s`), which
    co-residents divide as they divide ``sm``: ``r`` residents' loads take at least ``r x
    requests``. Zeros on chips without ``local_memory.load_bytes_in_flight``."""
    waited: np.ndarray
    """The load latency ``exposed`` already holds (the first load's; every load's where nothing
    is pipelined), which the miss tracking's time covers: loads that all fit in flight at once
    take one latency, not one plus their share of the tracking."""

    def seconds(self, programs: np.ndarray, residents: np.ndarray | int = 1) -> np.ndarray:
        """Time of each of ``programs`` when ``residents`` programs share its SM."""
        exposed, sm = self.exposed.take(programs), self.sm.take(programs)
        tracked = residents * self.requests.take(programs) - self.waited.take(programs)
        if self.serial:
            return exposed + residents * sm + np.maximum(tracked, 0.0)
        return exposed + np.maximum.reduce([np.broadcast_to(residents * sm, tracked.shape), tracked,
                                            self.chain.take(programs), self.latency_bound.take(programs)])

    def at_queue(self, per_second: ProgramTimes, queue_s: float) -> ProgramTimes:
        """These times (unloaded) with every HBM load waiting ``queue_s`` more, where
        ``per_second`` are the same times at one second of queueing: each field is linear in
        the delay."""
        return ProgramTimes(**{name: value if name == "serial" else value + queue_s * (getattr(per_second, name) - value)
                               for name, value in vars(self).items() if name != "lists"})

    @cached_property
    def lists(self) -> ProgramTimeLists:
        """These times as Python floats, for one program at a time (made when first asked)."""
        return ProgramTimeLists(self.exposed.tolist(), self.sm.tolist(), self.chain.tolist(),
                                self.latency_bound.tolist(), self.serial, self.requests.tolist(),
                                self.waited.tolist())


@dataclass(frozen=True)
class ProgramTimeLists:
    """:class:`ProgramTimes` as Python floats, for one program at a time."""

    exposed: list[float]
    sm: list[float]
    chain: list[float]
    latency_bound: list[float]
    serial: bool
    requests: list[float]
    waited: list[float]

    def seconds(self, program: int, residents: int) -> float:
        tracked = residents * self.requests[program] - self.waited[program]
        if self.serial:
            return self.exposed[program] + residents * self.sm[program] + max(tracked, 0.0)
        return self.exposed[program] + max(residents * self.sm[program], tracked, self.chain[program],
                                           self.latency_bound[program])


def instruction_streams(trace: KernelTrace, chip: Chip) -> int | np.ndarray:
    """Independent instruction streams of one program on an SM: its warps spread over
    the SM's sub-partitions, one tensor core each (a Hopper warpgroup is one stream).
    While one stream waits on its softmax, another's MMAs keep the tensor cores busy.
    A warp-specialized kernel's consumer warpgroups are its streams, or one stream where
    they take turns (``kernel.execution``: ``consumers``, ``consumer_chains``).
    One number for the trace, or one per program where its kernels' warps differ."""
    execution = trace.kernel.execution
    if execution is not None and execution.consumers is not None:
        return 1 if execution.consumer_chains == "shared" else execution.consumers
    per_kernel = [max(1, res.warps // chip.matrix.units_per_core) for res in trace.resources_by_kernel]
    if len(set(per_kernel)) == 1:
        return per_kernel[0]
    return np.asarray(per_kernel)[kernel_index(trace)]


def at_rows(values: int | np.ndarray, rows: np.ndarray) -> int | np.ndarray:
    """``values`` (one number, or one per program as :func:`instruction_streams` gives
    them) at ``rows``."""
    return values if np.isscalar(values) else values[rows]


def gpu_program_times(chip: Chip, costs: ProgramCosts, hits: np.ndarray, depth: int, streams: int = 1, *,
                      queue_s: float = 0.0, wave: int | np.ndarray | None = None,
                      hbm_write_share: np.ndarray | None = None) -> ProgramTimes:
    """Per-program seconds on an SM. Matrix and vector units are separate pipes: the
    SM's busiest unit bounds throughput, and one program's own matrix and vector work
    overlap only across its ``streams`` (:func:`instruction_streams`). ``queue_s`` is
    the HBM queueing delay (:func:`hbm_queueing_s`): a read from HBM waits it on top of
    the latency (stores do not wait: a program retires with its stores in flight).
    ``wave``: the programs that finish together with each one (:func:`wave_programs`), whose
    exposed drains reach HBM at the same moment and share it: the drain's share of the
    program's writes that go on to HBM (``hbm_write_share``: its HBM write bytes over its
    writes; none without it); None: a drain moves at the port's rate, or at the SM's share
    of HBM where persistent CTAs store in step (a bound: no replay is faster)."""
    clock = chip.clock_hz
    compute = costs.matrix_s + costs.issued_vector_s  # what the program's streams issue in turn
    local_bandwidth = chip.local.bandwidth_bytes_per_cycle * clock
    local = costs.local_bytes / local_bandwidth
    global_bytes = costs.read_bytes + costs.write_bytes + costs.pinned_bytes
    port_bandwidth = chip.local.fill_bandwidth_bytes_per_cycle * clock
    port = global_bytes / port_bandwidth
    hit_fraction = np.divide(hits, costs.read_bytes, out=np.zeros_like(hits), where=costs.read_bytes > 0)
    cache_latency = chip.shared_cache.latency_s if chip.shared_cache else chip.hbm.latency_s
    latency = hit_fraction * cache_latency + (1 - hit_fraction) * (chip.hbm.latency_s + queue_s)
    latency = latency + costs.extra_load_latency_s
    reads = costs.read_iterations
    latency = np.where(reads > 0, latency, 0.0)
    # a persistent CTA's later units (costs.follows) were launched already
    overhead = np.where(costs.follows > 0, 0.0, chip.program_overhead_s)
    # on an idle chip the first load finds no queue
    startup = np.where(reads > 0, latency - (1 - hit_fraction) * queue_s, 0.0) + overhead
    requests = miss_tracking_s(chip, costs, costs.read_bytes, latency)
    if depth <= 1:
        # no overlap: each read waits its latency, then transfer and compute in turn
        return ProgramTimes(reads * latency + overhead, compute + np.maximum(port, local), np.zeros_like(port),
                            np.zeros_like(port), True, startup, requests, waited=reads * latency)
    # Pipeline fill and drain: the first loads (after one latency) and the last stores
    # move at the core's port bandwidth with nothing to overlap them. In between, later
    # loads overlap compute while `depth - 1` are in flight (Little's law).
    fill_exposed = np.where(costs.prefetched > 0, 0.0, costs.fill_bytes)
    drain_exposed = costs.drain_bytes * (1.0 - costs.drain_hidden)
    drain_cached = costs.drain_cache_bytes * (1.0 - costs.drain_hidden)
    edge_bytes = fill_exposed + drain_exposed
    edge_rate = min(port_bandwidth, local_bandwidth)
    # Persistent CTAs whose consumers wait for their tile's store run their units in step
    # (the same work, started together), so every SM stores at once: the stores drain at the
    # SM's share of HBM, which takes them (the L2 is full of earlier dirty lines), not at the
    # port's rate; the MMAs of the next unit wait meanwhile. Writes pinned in the L2 (stream-K's
    # partial accumulators) are not HBM's to take: they drain at the port's rate.
    store_rate = np.where(costs.drain_in_step > 0, min(edge_rate, hbm_share_per_core(chip)), edge_rate)
    drain_s = (drain_exposed - drain_cached) / store_rate + drain_cached / edge_rate
    if wave is not None:
        # The same holds for any wave: programs that started together with the same work
        # store their last tiles at the same moment, so what of those stores goes on to HBM
        # moves at the wave's share of it, the rest (writes the L2 keeps) at the port's rate.
        share = np.minimum(edge_rate, chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency / wave)
        to_hbm = (drain_exposed - drain_cached) * (0.0 if hbm_write_share is None else hbm_write_share)
        drain_s = np.maximum(drain_s, to_hbm / share + np.maximum(drain_exposed - to_hbm, 0.0) / edge_rate)
    # A following unit whose loads wait for the store before them (``next_loads: after_store``)
    # issues them when every CTA in step has stored: they too reach HBM at the same moment, so
    # what of the fill HBM serves (the program's read hit fraction missing) moves at the SM's
    # share of it, the rest at the port's rate.
    in_step_fill = (costs.drain_in_step > 0) & (costs.follows > 0) & (costs.prefetched == 0)
    fill_s = fill_exposed / edge_rate
    from_hbm = fill_exposed * (1.0 - hit_fraction)
    fill_s = np.where(in_step_fill, np.maximum(fill_s, from_hbm / min(edge_rate, hbm_share_per_core(chip))
                                               + (fill_exposed - from_hbm) / edge_rate), fill_s)
    first_latency = np.where(costs.prefetched > 0, 0.0, latency)
    in_flight = depth - 1
    return ProgramTimes(
        exposed=first_latency + fill_s + drain_s + overhead,
        sm=np.maximum.reduce([
            costs.matrix_s, costs.vector_s,
            (costs.local_bytes - edge_bytes) / local_bandwidth, (global_bytes - edge_bytes) / port_bandwidth,
        ]),
        # what the threads store to local memory between MMAs waits on them (and they on it)
        chain=(compute - costs.overlapped_s + costs.staged_bytes / local_bandwidth) / streams,
        latency_bound=np.maximum(reads - 1, 0) * latency / in_flight,
        serial=False, startup=startup, requests=requests, waited=first_latency,
    )


def miss_tracking_s(chip: Chip, costs: ProgramCosts, load_bytes: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Seconds a program's ``load_bytes`` fill its SM's miss tracking: an SM keeps at most
    ``local_memory.load_bytes_in_flight`` bytes of its threads' loads in flight, each held for
    its level's ``latency`` (Little's law), so one SM's loads move at most that many bytes per
    latency whatever its programs ask. Loads a TMA unit issues (``costs.thread_loads`` 0) do not
    pass through the SM's L1 and are not held to it; zeros on chips without the limit."""
    in_flight = chip.local.load_bytes_in_flight
    if not in_flight:
        return np.zeros_like(load_bytes)
    return costs.thread_loads * load_bytes * latency / in_flight


def wave_programs(trace: KernelTrace, chip: Chip, per_cores: list[int]) -> np.ndarray:
    """Per program, the programs of its kernel that run at once: a full wave (every SM's
    resident programs) or the whole kernel where it is smaller. Programs launched together
    on an idle chip with the same work finish together and are replaced together (the
    replay's cohorts), so each wave's last stores coincide. A kernel's last, partial wave is
    counted as a full one (its drain then shares HBM with more programs than it has: slower,
    where few programs are left)."""
    counts = np.diff([0, *(trace.kernel.kernel_starts or []), trace.num_programs])
    waves = np.minimum(counts, chip.num_cores * np.asarray(per_cores))
    return waves[kernel_index(trace)].astype(float)


def hbm_share_per_core(chip: Chip) -> float:
    """One core's share of the HBM bandwidth when every core moves data at once (bytes/s)."""
    return chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency / chip.num_cores


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
    streams = at_rows(streams, sample)
    unloaded = gpu_program_times(chip, some, hits[sample], depth, streams)
    per_second = gpu_program_times(chip, some, hits[sample], depth, streams, queue_s=1.0)
    residents = min(per_core, math.ceil(n / chip.num_cores))
    concurrent = min(n, chip.num_cores * per_core)
    programs = np.arange(len(sample))
    resource_rate = min((caps[r] * n / total for r, total in totals.items() if total > 0 and r in caps),
                        default=math.inf)
    bytes_per_program = totals["hbm"] / n

    def excess(q: float) -> float:
        seconds = unloaded.at_queue(per_second, q).seconds(programs, residents)
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
