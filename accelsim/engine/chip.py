"""Replay of one kernel trace on one chip: the chip engine's entry points.

Each kind of chip has its strategy (:class:`ChipEngine`): GPUs dispatch programs onto SMs
(:mod:`accelsim.engine.gpu`), TPUs run grid steps in sequence on their TensorCores
(:mod:`accelsim.engine.tpu`). Both replay on the one fluid pool
(:mod:`accelsim.engine.fluid`). See ``docs/engine.md`` for the model and its parameters.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import numpy as np

from accelsim.arch.model import Chip, GpuChip, TpuChip
from accelsim.engine.cohorts import CoreSlots
from accelsim.engine.energy import with_energy
from accelsim.engine.gpu import GpuEngine, reuse_window, shared_cache_hits
from accelsim.engine.occupancy import gpu_occupancies, gpu_occupancy
from accelsim.engine.program_times import ProgramTimes, gpu_program_times, hbm_queueing_s, instruction_streams
from accelsim.engine.programs import ProgramCosts, program_costs
from accelsim.engine.result import KernelSimulation, Segment, launch_s
from accelsim.engine.shortcuts import PLAIN, ReplayMemo, Shortcuts
from accelsim.engine.tpu import TpuEngine, tpu_core_assignment
from accelsim.errors import InputError
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace

__all__ = [
    "PLAIN", "ChipEngine", "CoreSlots", "KernelSimulation", "ProgramTimes", "ReplayMemo", "Segment", "Shortcuts",
    "check_hbm_capacity", "gpu_occupancies", "gpu_occupancy", "gpu_program_times", "hbm_queueing_s",
    "instruction_streams", "latency_lower_bound_s", "launch_s", "shared_cache_hits", "simulate_kernel",
    "tpu_core_assignment",
]


class ChipEngine(Protocol):
    """How one kind of chip replays a kernel trace (:data:`ENGINES`)."""

    def simulate(self, trace: KernelTrace, chip: Chip, *, timeline: bool, replays: ReplayMemo | None,
                 hits: np.ndarray | None, costs: ProgramCosts | None, shortcuts: Shortcuts) -> KernelSimulation:
        """Replay the trace (``hits``, ``costs``: already computed, or None)."""

    def lower_bound_s(self, trace: KernelTrace, chip: Chip, costs: ProgramCosts, hits: np.ndarray | None,
                      shortcuts: Shortcuts) -> float:
        """A latency the replay never goes below, cheaper than the replay."""

    def shared_cache_hits(self, trace: KernelTrace, chip: Chip) -> np.ndarray | None:
        """The reuse model's hits, for a search to share between bound and replay (or None)."""


ENGINES: dict[type[Chip], ChipEngine] = {GpuChip: GpuEngine(), TpuChip: TpuEngine()}
"""The engine of each chip kind: a new kind of chip is a :class:`~accelsim.arch.model.Chip`
subclass and its engine here."""


def engine_for(chip: Chip) -> ChipEngine:
    return ENGINES[type(chip)]


def shared_cache_hits(trace: KernelTrace, chip: Chip) -> np.ndarray | None:
    """Per program, two rows (None where the chip's engine keeps no shared cache, a TPU):
    bytes of its HBM-level reads that the shared cache (L2) serves, and bytes of its writes
    the L2 absorbs (:func:`accelsim.engine.gpu.shared_cache_hits`). A search computes it
    once per config for both its bound and its replay."""
    return engine_for(chip).shared_cache_hits(trace, chip)


def latency_lower_bound_s(trace: KernelTrace, chip: Chip, hits: np.ndarray | None = None, *,
                          costs: ProgramCosts | None = None, shortcuts: Shortcuts = Shortcuts()) -> float:
    """A cheap bound that :func:`simulate_kernel` never goes below, for pruning searches:
    every resource's total demand at its full capacity and, on a GPU, bounds on programs
    alone on an SM (:func:`~accelsim.engine.gpu_bound.gpu_lower_bound_s`). Without ``hits``
    (:func:`shared_cache_hits`) every read is taken at the nearer level's latency and HBM
    is left out; with them, HBM bytes and latencies are the replay's own. Costs one
    per-program accounting pass, none if ``costs`` (:func:`program_costs` of this trace
    on this chip) are given."""
    if costs is None:
        costs = program_costs(trace, chip)
    return engine_for(chip).lower_bound_s(trace, chip, costs, hits, shortcuts)


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
                    costs: ProgramCosts | None = None, shortcuts: Shortcuts = Shortcuts()) -> KernelSimulation:
    """Predict the latency of one kernel trace on one chip (with the chip's values for the
    trace's kernel family, where its config scopes some to families). ``replays``: a memo
    shared by the calls of one search, so a GPU replay whose inputs equal an earlier
    one's is not made again (the results are identical either way). ``hits`` and
    ``costs``: the trace's :func:`shared_cache_hits` (GPU only) and :func:`program_costs`
    on this chip (as scoped to the trace's family), if already computed. ``shortcuts``:
    which exact shortcuts the replay takes (all by default; :data:`PLAIN`: none). On a chip
    with a power model the result has its energy, and under ``power.cap`` a kernel whose
    power passes the cap is replayed at the clock the cap leaves
    (:func:`~accelsim.engine.energy.with_energy`)."""
    chip = chip.for_family(trace.metadata.get("family"))
    check_hbm_capacity(trace, chip)
    started = time.perf_counter()
    engine = engine_for(chip)
    if hits is None and isinstance(chip, GpuChip) and chip.power is not None and chip.power.cap_w is not None:
        try:  # a lower clock's replays reuse it (below)
            hits = shared_cache_hits(trace, chip)
        except InputError:  # the replay says what is wrong with the trace, in its own order of checks
            hits = None
    result = engine.simulate(trace, chip, timeline=timeline, replays=replays, hits=hits, costs=costs,
                             shortcuts=shortcuts)
    window = reuse_window(trace, chip) if hits is not None and isinstance(chip, GpuChip) else None
    result = with_energy(trace, chip, result, lambda slower: engine.simulate(
        trace, slower, timeline=timeline, replays=replays, costs=None, shortcuts=shortcuts,
        hits=hits if window is None or reuse_window(trace, slower) == window else None))
    result.sim_wall_s = time.perf_counter() - started
    return result
