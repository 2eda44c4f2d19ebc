"""What a kernel replay reports (:class:`KernelSimulation`), and the parts every chip kind's
replay shares: the resources' capacities, a fresh clock and pool, utilization and bound."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import simpy

from accelsim.arch.model import Chip
from accelsim.engine.fluid import FluidResources
from accelsim.engine.programs import ProgramCosts
from accelsim.results import KernelResult
from accelsim.trace.kernel import KernelTrace
from accelsim.units import PS_PER_S, check_simulated_ps, ps_to_seconds

if TYPE_CHECKING:
    from accelsim.engine.energy import KernelEnergy

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
    """Everything one replay produced; :meth:`result` is what it found in the shared schema."""

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
    used: dict[str, float] = field(default_factory=dict)
    """What each resource served over the replay (bytes; core-seconds for the units)."""
    energy: KernelEnergy | None = None
    """On a chip with a power model (:mod:`accelsim.engine.energy`)."""
    power_cap_w: float | None = None
    """The cap the chip ran under (``power.cap``), if any."""
    throttled_clock_hz: float | None = None
    """Under a cap the kernel's power passed at the chip's clock: the clock step it ran at."""
    full_clock_latency_s: float | None = None
    """With ``throttled_clock_hz``: the latency at the chip's own clock."""
    limiter_late: bool = False
    """Under a cap its power passes, launched from idle (``power.dvfs.boost.from_idle``): it ended
    within ``power.dvfs.boost.cap_delay``, before the power limiter acted, so it kept its clock."""

    @property
    def kernels(self) -> int:
        """Kernels the trace launches one after another, each paying the launch."""
        return len(self.per_kernel_s) if self.per_kernel_s else 1

    def result(self) -> KernelResult:
        """What the replay found, in the shared results schema."""
        return KernelResult(
            arch=self.arch, kernel=self.kernel, latency_s=self.latency_s, launch_overhead_s=self.launch_overhead_s,
            flops=self.flops, hbm_bytes=self.hbm_bytes, bound=self.bound, utilization=self.utilization,
            config=self.config, programs=self.programs, programs_per_core=self.programs_per_core,
            occupancy_limit=self.occupancy_limit, shared_cache_hit_rate=self.shared_cache_hit_rate,
            sim_wall_s=self.sim_wall_s, events=self.events, local_memory_bytes=self.local_memory_bytes,
            hbm_queueing_s=self.hbm_queueing_s, per_kernel_s=tuple(self.per_kernel_s) if self.per_kernel_s else None,
            **self._energy_fields(),
        )

    def _energy_fields(self) -> dict:
        if self.energy is None:
            return {}
        return {"energy_j": self.energy.joules, "average_power_w": self.energy.average_power_w,
                "energy_j_by_part": dict(self.energy.joules_by_part), "power_cap_w": self.power_cap_w,
                "throttled_clock_hz": self.throttled_clock_hz, "full_clock_latency_s": self.full_clock_latency_s,
                "limiter_late": self.limiter_late}

    def summary(self) -> dict:
        """The ``--json`` form of :meth:`result`."""
        return self.result().to_json()


def capacities(chip: Chip, cores: int, hbm_share: float = 1.0, hbm_reads: float = 0.0,
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


def utilization_of(used: dict[str, float], caps: dict[str, float], body_s: float) -> dict[str, float]:
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


def bound_of(utilization: dict[str, float]) -> str:
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


@dataclass
class ReplayClock:
    """A fresh SimPy clock and fluid pool (free-running) for one replay, with the segments
    and bandwidth counters a timeline collects (none unless ``timeline``)."""

    env: simpy.Environment
    pool: FluidResources
    timeline: bool
    segments: list[Segment] = field(default_factory=list)
    counters: list[tuple[int, dict[str, float]]] = field(default_factory=list)

    @classmethod
    def new(cls, caps: dict[str, float], timeline: bool) -> ReplayClock:
        env = simpy.Environment()
        clock = cls(env, FluidResources(env, caps, free_running=True), timeline)
        if timeline:
            clock.pool.observer = lambda now, p: clock.counters.append((now, p.rates()))
        return clock


def launch_s(trace: KernelTrace, chip: Chip) -> float:
    """The chip's launch overhead once per kernel of the trace (``kernel.kernel_starts``),
    within the simulated clock's range as every other time is."""
    seconds = chip.launch_overhead_s * (1 + len(trace.kernel.kernel_starts or ()))
    check_simulated_ps(seconds * PS_PER_S)
    return seconds


def kernel_result(trace: KernelTrace, chip: Chip, costs: ProgramCosts, pool, caps: dict[str, float], body_ps: int,
                  hbm, per_kernel_s: list[float] | None = None, local_memory_bytes: int | None = None,
                  **specific) -> KernelSimulation:
    """What every replay reports, from the pool's accounting at the end (``pool``: anything
    with its ``used`` and ``events``); ``per_kernel_s``: each kernel's seconds when the trace
    has several."""
    body_s = ps_to_seconds(body_ps)
    utilization = utilization_of(pool.used, caps, body_s)
    return KernelSimulation(
        arch=chip.name,
        kernel=trace.kernel.name,
        latency_s=body_s + launch_s(trace, chip),
        flops=float(costs.flops.sum()),
        hbm_bytes=float(hbm.sum()),
        utilization=utilization,
        bound=bound_of(utilization),
        programs=trace.num_programs,
        events=pool.events,
        sim_wall_s=0.0,
        config=dict(trace.metadata.get("config", {})),
        launch_overhead_s=launch_s(trace, chip),
        used=dict(pool.used),
        local_memory_bytes=(trace.kernel.resources.local_memory_bytes if local_memory_bytes is None
                            else local_memory_bytes),
        per_kernel_s=per_kernel_s if trace.kernel.kernel_starts else None,
        **specific,
    )


def kernel_seconds(ends_ps: Sequence[int]) -> list[float]:
    """Each kernel's seconds from the picoseconds at which each ended (in launch order)."""
    return [ps_to_seconds(end - start) for start, end in zip([0, *ends_ps[:-1]], ends_ps)]
