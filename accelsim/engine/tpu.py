"""TPU replay: each TensorCore used by the kernel runs its grid steps in sequence; the grid
is split over the two TensorCores of a megacore chip along the first ``parallel`` axis.
The Pallas pipeline moves step ``i+1``'s copies while step ``i`` pays its fixed overhead
and computes, so a core's time alone is ``prologue + sum(max(overhead + compute_i,
copy_{i+1})) + drain``; each core's share of a kernel is one flow, and cores share HBM
as flows. The kernels of a trace run one after another (:class:`KernelSequence`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim.arch.model import TpuChip
from accelsim.engine.fluid import Flow
from accelsim.engine.occupancy import resources_field
from accelsim.engine.programs import ProgramCosts, grid_coordinate, kernel_index, program_costs
from accelsim.engine.result import (
    KernelSimulation,
    ReplayClock,
    Segment,
    capacities,
    kernel_result,
    kernel_seconds,
    launch_s,
)
from accelsim.errors import InputError
from accelsim.trace.kernel import KernelTrace


def tpu_core_assignment(trace: KernelTrace, chip: TpuChip) -> tuple[np.ndarray, int]:
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


def tpu_capacities(chip: TpuChip, cores: int, costs: ProgramCosts) -> dict[str, float]:
    """Capacities for a kernel on ``cores`` TensorCores: a TensorCore that is its own
    device (not megacore) sees its share of the chip's HBM."""
    return capacities(chip, cores, 1.0 if chip.megacore else 1.0 / chip.num_cores,
                      float(costs.read_bytes.sum()), float(costs.write_bytes.sum()))


def check_vmem(trace: KernelTrace, chip: TpuChip) -> None:
    for i, res in enumerate(trace.resources_by_kernel):
        if res.local_memory_bytes > chip.local.capacity_bytes:
            raise InputError(
                f"a program needs {res.local_memory_bytes} bytes of VMEM; {chip.name} has {int(chip.local.capacity_bytes)}",
                field=f"{resources_field(i)}.local_memory_bytes",
            )


@dataclass(eq=False)
class CoreShare(Flow):
    """One TensorCore's grid steps of one kernel of the trace: one flow."""

    count: int = 1
    core: int = 0


@dataclass(frozen=True)
class StepCosts:
    """Per grid step: its compute (matrix and vector work, or VMEM time, the longer), its
    HBM bytes and their copy time at the core's DMA bandwidth, and the drain's bandwidth."""

    compute_s: np.ndarray
    hbm_bytes: np.ndarray
    copy_s: np.ndarray
    copy_bytes_per_s: float

    @classmethod
    def of(cls, chip: TpuChip, costs: ProgramCosts, caps: dict[str, float]) -> StepCosts:
        clock = chip.clock_hz
        copy_bw = min(chip.local.fill_bandwidth_bytes_per_cycle * clock, caps["hbm"])
        compute = np.maximum(costs.matrix_s + costs.vector_s,
                             costs.local_bytes / (chip.local.bandwidth_bytes_per_cycle * clock))
        hbm = costs.read_bytes + costs.write_bytes
        return cls(compute, hbm, hbm / copy_bw, copy_bw)


def pipeline_seconds(chip: TpuChip, costs: ProgramCosts, steps: StepCosts, mine: np.ndarray, kernel_of: np.ndarray,
                     double_buffered: bool) -> np.ndarray:
    """Each of one core's grid steps ``mine`` (in order): its time in the core's pipeline.

    The copies for grid step i+1 run during step i (with two or more buffers; with one,
    pipeline_depth 1, they wait for it): the DMA engines move them while the core pays the
    step's fixed overhead and computes, so a step takes the longer of the two. Step 0's
    copies (and one latency) come first. Each kernel of the trace starts its pipeline anew
    on every core: its first copies wait, and the kernel before drains its last writes."""
    first = np.ones(mine.size, dtype=bool)
    first[1:] = kernel_of[mine][1:] != kernel_of[mine][:-1]
    last = np.append(first[1:], True)
    copy = steps.copy_s
    next_copy = np.where(last, 0.0, np.append(copy[mine][1:], 0.0))
    busy = steps.compute_s[mine] + chip.program_overhead_s
    seconds = np.maximum(busy, next_copy) if double_buffered else busy + next_copy
    return (seconds + np.where(first, copy[mine] + chip.hbm.latency_s, 0.0)
            + np.where(last, costs.drain_bytes[mine] / steps.copy_bytes_per_s, 0.0))


def core_shares(trace: KernelTrace, chip: TpuChip, costs: ProgramCosts, steps: StepCosts,
                core_of: np.ndarray, cores: int) -> list[list[CoreShare]]:
    """Per kernel of the trace, a flow per TensorCore that runs some of its grid steps
    (``core_of`` each step, on ``cores``: :func:`tpu_core_assignment`)."""
    kernel_of = kernel_index(trace)
    kernels = int(kernel_of.max()) + 1 if kernel_of.size else 1
    shares: list[list[CoreShare]] = [[] for _ in range(kernels)]
    hbm = steps.hbm_bytes
    for core in range(cores):
        mine = np.nonzero(core_of == core)[0]
        if mine.size == 0:
            continue
        seconds = pipeline_seconds(chip, costs, steps, mine, kernel_of, trace.kernel.pipeline_depth > 1)
        for k in np.unique(kernel_of[mine]).tolist():
            ours = kernel_of[mine] == k
            rows = mine[ours]
            shares[k].append(CoreShare(
                name=f"TensorCore {core}" + (f", kernel {k}" if kernels > 1 else ""),
                demand={"matrix": float(costs.matrix_s[rows].sum()),
                        "vector": float(costs.vector_s[rows].sum()),
                        "local_memory": float(costs.local_bytes[rows].sum()),
                        "port": float(hbm[rows].sum()),
                        "hbm": float(hbm[rows].sum())},
                max_rate=1.0 / float(seconds[ours].sum()),
                count=int(rows.size),
                core=core,
            ))
    return shares


class KernelSequence:
    """The kernels of a trace in turn: a kernel starts when the one before has finished on
    every TensorCore (a ``pallas_call`` after another), so the kernels' times are the
    replay's own."""

    def __init__(self, clock: ReplayClock, shares: list[list[CoreShare]]) -> None:
        self.clock = clock
        self.shares = shares
        self.kernel = 0
        self.pending = 0
        self.ends: list[int] = []
        """When each kernel ended (ps)."""

    def run(self) -> list[int]:
        self._start(0)
        self.clock.env.run()
        return self.ends

    def _start(self, k: int) -> None:
        while k < len(self.shares) and not self.shares[k]:
            self.ends.append(self.clock.env.now)  # a kernel with no programs takes no time
            k += 1
        if k == len(self.shares):
            return
        self.kernel, self.pending = k, len(self.shares[k])
        for share in self.clock.pool.start_many(self.shares[k]):
            share.callbacks.append(self._done)

    def _done(self, share: CoreShare) -> None:
        if self.clock.timeline:
            several = f" (kernel {self.kernel})" if len(self.shares) > 1 else ""
            self.clock.segments.append(Segment(f"TensorCore {share.core}", f"{share.count} grid steps{several}",
                                               share.started_ps, share.finished_ps, {"programs": share.count}))
        self.pending -= 1
        if self.pending == 0:
            self.ends.append(self.clock.env.now)
            self._start(self.kernel + 1)


def simulate_tpu(trace: KernelTrace, chip: TpuChip, *, timeline: bool = False,
                 costs: ProgramCosts | None = None) -> KernelSimulation:
    """Replay a kernel trace on a TPU."""
    costs = costs if costs is not None else program_costs(trace, chip)
    check_vmem(trace, chip)
    core_of, cores = tpu_core_assignment(trace, chip)
    caps = tpu_capacities(chip, cores, costs)
    steps = StepCosts.of(chip, costs, caps)
    clock = ReplayClock.new(caps, timeline)
    ends = KernelSequence(clock, core_shares(trace, chip, costs, steps, core_of, cores)).run()
    return kernel_result(
        trace, chip, costs, clock.pool, caps, clock.env.now, steps.hbm_bytes,
        per_kernel_s=kernel_seconds(ends),
        programs_per_core=1,
        occupancy_limit="sequential grid",
        shared_cache_hit_rate=None,
        segments=clock.segments,
        counters=clock.counters,
    )


def tpu_lower_bound_s(trace: KernelTrace, chip: TpuChip, costs: ProgramCosts) -> float:
    """A cheap bound that a TPU replay never goes below: the matrix, vector and HBM work
    at their full capacity, and the launch."""
    caps = tpu_capacities(chip, tpu_core_assignment(trace, chip)[1], costs)
    hbm = costs.read_bytes + costs.write_bytes
    totals = {"matrix": costs.matrix_s.sum(), "vector": costs.vector_s.sum(), "hbm": hbm.sum()}
    return max(float(v) / caps[k] for k, v in totals.items()) + launch_s(trace, chip)


class TpuEngine:
    """The chip engine's strategy for TPUs (:class:`~accelsim.engine.chip.ChipEngine`)."""

    def simulate(self, trace: KernelTrace, chip: TpuChip, *, timeline: bool, replays, hits, costs: ProgramCosts | None,
                 shortcuts) -> KernelSimulation:
        return simulate_tpu(trace, chip, timeline=timeline, costs=costs)

    def lower_bound_s(self, trace: KernelTrace, chip: TpuChip, costs: ProgramCosts, hits, shortcuts) -> float:
        return tpu_lower_bound_s(trace, chip, costs)

    def shared_cache_hits(self, trace: KernelTrace, chip: TpuChip) -> None:
        return None  # CMEM is not used by Pallas kernels
