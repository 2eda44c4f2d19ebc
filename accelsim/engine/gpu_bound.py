"""A cheap bound that a GPU replay never goes below, for pruning searches
(:func:`gpu_lower_bound_s`)."""

from __future__ import annotations

import numpy as np

from accelsim.arch.model import GpuChip
from accelsim.engine.cohorts import cohort_keys, groups
from accelsim.engine.occupancy import gpu_occupancies
from accelsim.engine.program_times import at_rows, gpu_program_times, instruction_streams
from accelsim.engine.programs import ProgramCosts
from accelsim.engine.result import capacities, launch_s
from accelsim.engine.shortcuts import Shortcuts, kernel_runs
from accelsim.engine.write_backs import hbm_traffic
from accelsim.trace.kernel import KernelTrace


def gpu_lower_bound_s(trace: KernelTrace, chip: GpuChip, costs: ProgramCosts, hits: np.ndarray | None = None, *,
                      shortcuts: Shortcuts = Shortcuts()) -> float:
    """A cheap bound that a GPU replay never goes below, for pruning searches: every
    resource's total demand at its full capacity, and bounds on programs alone on an SM:
    the slowest cohort key's fastest program, every program's time alone over the SMs'
    program slots, and the last programs' starts (:func:`_last_starts_bound`). Without
    ``hits`` (:func:`~accelsim.engine.gpu.shared_cache_hits`: read hits and absorbed
    writes) every read is taken at the nearer level's latency and HBM is left out; with
    them, HBM bytes and latencies are the replay's own.

    The slot bound holds because a replayed program never runs faster than alone (more
    residents and contention only slow it; a cohort takes its members' mean time, so
    its slot-time is their sum) and an SM holds at most ``per_core`` programs at once.
    No replay and no reuse model: ``costs`` are the trace's per-program accounting."""
    per_core = max(per_core for per_core, _ in gpu_occupancies(trace, chip))  # raises if a kernel does not fit
    moved = costs.read_bytes + costs.write_bytes + costs.pinned_bytes
    totals = {"matrix": costs.matrix_s.sum(), "vector": costs.vector_s.sum(),
              "local_memory": costs.local_bytes.sum(), "port": moved.sum()}
    reads = writes = 0.0
    if hits is not None:
        hbm_reads, hbm_writes = hbm_traffic(chip, costs, hits)
        hits = hits[0]
        reads, writes = float(hbm_reads.sum()), float(hbm_writes.sum())
        totals["hbm"] = reads + writes
    caps = capacities(chip, chip.num_cores, 1.0, reads, writes)
    if "shared_cache" in caps:
        totals["shared_cache"] = costs.cache_bytes.sum()
    if hits is None:
        cache_nearer = chip.shared_cache is not None and chip.shared_cache.latency_s <= chip.hbm.latency_s
        hits = costs.read_bytes if cache_nearer else np.zeros_like(costs.read_bytes)
    bound = max(float(v) / caps[k] for k, v in totals.items())
    # timed once per run of identical programs (the same numbers as timing each)
    starts, run_of = kernel_runs(trace, costs, hits, runs_from=shortcuts.runs_from)
    ran, run_hits = (costs, hits) if run_of is None else (costs.take(starts), hits[starts])
    times = gpu_program_times(chip, ran, run_hits, trace.kernel.pipeline_depth,
                              at_rows(instruction_streams(trace, chip), starts))
    alone = times.seconds(np.arange(ran.num_programs))
    # a cohort runs at its members' mean speed, so only each key's fastest member is safe
    floor = np.empty(ran.num_programs)
    for members in groups(cohort_keys(ran)):
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
