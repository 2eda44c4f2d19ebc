"""From a kernel trace to per-program totals, vectorised over programs with numpy.

Exact accounting happens here: every byte and flop a trace describes is summed per
program (in launch order), and the chip turns flops into core-seconds on its matrix,
vector and special-function units (with operand padding to the MMA/MXU granule).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, fields

import numpy as np

from accelsim.arch.model import Chip, GpuChip, TpuChip
from accelsim.errors import InputError
from accelsim.trace.kernel import DTYPE_BYTES, GRID_VARS, Compute, KernelTrace, Step


def _grid_strides(trace: KernelTrace) -> dict[int, int]:
    """Launch-position stride of each grid axis (the fastest axis has stride 1)."""
    grid = trace.kernel.grid
    axes = range(len(grid)) if trace.kernel.launch_order == "first_axis_fastest" else reversed(range(len(grid)))
    strides, stride = {}, 1
    for axis in axes:
        strides[axis] = stride
        stride *= grid[axis]
    return strides


def grid_coordinate(trace: KernelTrace, axis: int) -> np.ndarray:
    """Each program's coordinate along one grid axis, in launch order."""
    pid = np.arange(trace.num_programs, dtype=np.int64)
    return (pid // _grid_strides(trace)[axis]) % trace.kernel.grid[axis]


def kernel_index(trace: KernelTrace) -> np.ndarray:
    """Which kernel of the trace (``kernel.kernel_starts``) each program belongs to, 0 first."""
    starts = np.asarray(trace.kernel.kernel_starts or [], dtype=np.int64)
    return np.searchsorted(starts, np.arange(trace.num_programs, dtype=np.int64), side="right")


_DERIVED: dict[int, tuple[weakref.ref, dict]] = {}
"""Arrays derived from a trace alone, by ``id`` of the trace while it lives: a trace is
frozen, and a calibration simulates the same traces hundreds of times (converting a
list of millions of per-program integers costs a good part of a replay)."""


def _derived(trace: KernelTrace, name: str, make) -> object:
    key = id(trace)
    entry = _DERIVED.get(key)
    if entry is None or entry[0]() is not trace:
        entry = (weakref.ref(trace, lambda _ref, key=key: _DERIVED.pop(key, None)), {})
        _DERIVED[key] = entry
    cache = entry[1]
    if name not in cache:
        cache[name] = make(trace)
    return cache[name]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def program_vars(trace: KernelTrace) -> dict[str, np.ndarray]:
    """Grid coordinates ``p0..`` and the trace's ``program_vars``, one entry per program
    (read-only arrays, shared by every call on the same trace)."""
    return dict(_derived(trace, "program_vars", _make_program_vars))


def _make_program_vars(trace: KernelTrace) -> dict[str, np.ndarray]:
    grid = trace.kernel.grid
    pid = np.arange(trace.num_programs, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    for axis, stride in _grid_strides(trace).items():
        out[GRID_VARS[axis]] = _read_only((pid // stride) % grid[axis])
    for name, values in trace.program_vars.items():
        out[name] = _read_only(np.asarray(values, dtype=np.int64))
    out["pid"] = _read_only(pid)
    return out


def program_templates(trace: KernelTrace) -> np.ndarray:
    """The template index of each program (read-only, shared like :func:`program_vars`)."""
    return _derived(trace, "program_templates", _make_program_templates)


def _make_program_templates(trace: KernelTrace) -> np.ndarray:
    pt = trace.program_template
    if isinstance(pt, list):
        return _read_only(np.asarray(pt, dtype=np.int64))
    index = 0 if pt is None else [t.name for t in trace.templates].index(pt)
    return _read_only(np.full(trace.num_programs, index, dtype=np.int64))


def template_members(template_of: np.ndarray, index: int) -> np.ndarray | slice:
    """The programs that run template ``index``: a slice where they are one run of launch
    positions (every program, or all but a tail), which indexes without copying."""
    members = np.flatnonzero(template_of == index)
    if members.size and members[-1] - members[0] + 1 == members.size:
        return slice(int(members[0]), int(members[-1]) + 1)
    return members


def _count(members: np.ndarray | slice) -> int:
    return members.stop - members.start if isinstance(members, slice) else len(members)


def repeats(step: Step, variables: dict[str, np.ndarray], members: np.ndarray | slice) -> np.ndarray:
    """Iterations of ``step`` for each program in ``members`` (indices or a slice)."""
    if isinstance(step.repeat, int):
        return np.full(_count(members), step.repeat, dtype=np.int64)
    values = variables[step.repeat][members]
    if values.size and values.min() < 0:
        raise InputError(f"program variable {step.repeat!r} used as a repeat count is negative", field="repeat")
    return values


@dataclass(frozen=True)
class ProgramCosts:
    """Per-program totals (arrays indexed by launch position)."""

    template: np.ndarray
    iterations: np.ndarray
    """Step iterations (loads/computes that pipeline against each other)."""
    read_iterations: np.ndarray
    """Step iterations that wait for data (have at least one read transfer)."""
    flops: np.ndarray
    """Useful matrix + vector flops (special-function evaluations and work marked
    ``useful: false`` are not flops)."""
    matrix_flops: np.ndarray
    """Useful matrix flops (a recomputed product marked ``useful: false`` costs time only)."""
    special_ops: np.ndarray
    matrix_s: np.ndarray
    """Core-seconds on the matrix unit, with padding to its granule and efficiency."""
    vector_s: np.ndarray
    """Core-seconds the vector units are busy. On a GPU the FP32 cores and the special-function
    units (SFU/MUFU: exp2, rsqrt) are separate pipes of an SM sub-partition (the H100 and B200
    whitepapers' SM diagrams; the CUDA Programming Guide's throughput table rates them
    separately), so this is the busier of the two; on a TPU the sum."""
    issued_vector_s: np.ndarray
    """Core-seconds of vector and special-function work together: what the program's own
    instruction streams issue in turn (its dependency chain)."""
    overlapped_s: np.ndarray
    """The part of ``issued_vector_s`` issued in the shadow of the MMAs (``Compute.overlapped``):
    on the units' pipes, off the program's dependency chain."""
    local_bytes: np.ndarray
    """Bytes through the core's local memory: fills, drains and matrix operand reads."""
    staged_bytes: np.ndarray
    """The part of ``local_bytes`` that the program's own threads move between their registers
    and local memory (transfers at ``level: local``: a backward's dS stored to shared memory for
    the next MMA to read): its instruction streams wait on them, so they are on its chain."""
    read_bytes: np.ndarray
    """Reads of blocks that live in HBM (served by L2/CMEM or HBM)."""
    write_bytes: np.ndarray
    pinned_bytes: np.ndarray
    """Traffic to blocks pinned in the shared cache."""
    cache_bytes: np.ndarray
    """What the shared cache serves: reads, writes and pinned traffic, a multicast read
    counted once per cluster (its bytes over its ``multicast``)."""
    fill_bytes: np.ndarray
    """Bytes the first iteration with reads brings in: the pipeline prologue."""
    drain_bytes: np.ndarray
    """Bytes the last iteration with writes sends out: the pipeline epilogue."""
    drain_cache_bytes: np.ndarray
    """The part of ``drain_bytes`` written to blocks pinned in the shared cache (``level:
    shared_cache``, stream-K's partial accumulators): it stays in the L2, so it never waits
    for HBM to take it."""
    follows: np.ndarray
    """1 where the program is a persistent CTA's work unit after its first (trace
    ``kernel.execution.persistent_ctas``): its CTA was launched already; 0 elsewhere."""
    prefetched: np.ndarray
    """1 where a following unit's first loads were issued while the unit before computed
    (``kernel.execution.next_loads: prefetched``): no first latency, no fill; 0 elsewhere."""
    drain_hidden: np.ndarray
    """1 where a following unit's epilogue overlaps another consumer's main loop
    (``kernel.execution.epilogue: overlapped``); 0 elsewhere."""
    drain_in_step: np.ndarray
    """1 where the consumers wait for their tile's TMA store while every persistent CTA stores
    its tile at the same moment (``kernel.execution.epilogue: exposed``): the drain moves at the
    SM's share of HBM, not at its port's rate; 0 elsewhere."""
    extra_load_latency_s: np.ndarray
    """What each of the program's loads takes beyond a plain load's latency: the chip's
    ``local_memory.bulk_copy_latency`` where a TMA producer issues them, else 0."""
    thread_loads: np.ndarray
    """1 where the program's threads issue its loads through the SM's L1, which tracks them
    (``local_memory.load_bytes_in_flight``); 0 where a TMA unit issues them (``kernel.execution.loads:
    tma``)."""

    @property
    def num_programs(self) -> int:
        return len(self.template)

    def take(self, programs: np.ndarray) -> "ProgramCosts":
        """The costs of ``programs`` only (launch positions), in that order."""
        return ProgramCosts(**{f.name: getattr(self, f.name)[programs] for f in fields(self)})


def executed_matrix_flops(chip: Chip, shape: list[int]) -> float:
    """Flops the matrix unit spends on one ``[m, n, k]`` operation: each dimension padded
    up to the unit's granule (GPU MMA [m, n, k]; TPU: rows stream in groups of the VPU's
    sublanes, n and k fill the MXU's columns and rows)."""
    m, n, k = shape
    if isinstance(chip, TpuChip):
        rows, cols = chip.matrix.shape[:2]
        sublanes = chip.vector.shape[0] if chip.vector.shape else 8
        granule = (sublanes, cols, rows)
    else:
        granule = chip.matrix.shape[:3]
    padded = [math.ceil(size / g) * g for size, g in zip((m, n, k), granule)]
    return 2.0 * padded[0] * padded[1] * padded[2]


def _matrix_rate(chip: Chip, dtype: str, chained: bool = False) -> float:
    table = chip.matrix.flops_per_cycle_per_core
    if dtype not in table:
        raise InputError(
            f"chip {chip.name!r} has no matrix-unit rate for {dtype}; it has: {', '.join(table)}",
            field="compute.dtype",
        )
    efficiency = chip.matrix.chained_efficiency if chained else chip.matrix.efficiency
    return table[dtype] * chip.clock_hz * efficiency


def is_chained(step: Step) -> bool:
    """Whether the step's matrix work waits on its vector work: the step has matrix work
    and special-function work (a nonlinearity between matmuls, as attention's exp), or
    a matrix operation listed after vector work (attention's PV after the softmax of
    QK^T). Captured traces list work by unit, so the first test is the one they meet.
    A GEMM's k-step (matrix work only) is not chained."""
    if step.chained is not None:
        return step.chained and any(compute.unit == "matrix" for compute in step.compute)
    units = [compute.unit for compute in step.compute]
    if "matrix" not in units:
        return False
    if "special" in units:
        return True
    first_vector = next((i for i, unit in enumerate(units) if unit != "matrix"), len(units))
    return "matrix" in units[first_vector:]


def operand_reads(chip: Chip, m: int, n: int) -> tuple[int, int]:
    """How often a ``[m, n, k]`` block operation reads its A and B operands from local
    memory. An asynchronous MMA instruction (Hopper's wgmma, Blackwell's tcgen05) reads both
    of its operands from shared memory itself: with instructions of at most ``[mi, ni, ki]``
    (``matrix_unit.instruction_shape``) the block runs ``ceil(m / mi)`` rows of
    instructions, each reading all of B, and ``ceil(n / ni)`` columns, each reading all of
    A. Without an instruction shape each operand is read once."""
    shape = chip.matrix.instruction_shape if isinstance(chip, GpuChip) else None
    if shape is None:
        return 1, 1
    return -(-n // shape[1]), -(-m // shape[0])


def _vector_rate(chip: Chip, dtype: str) -> float:
    table = chip.vector.flops_per_cycle_per_core
    per_cycle = table.get(dtype, table.get("fp32"))
    if per_cycle is None:
        raise InputError(f"chip {chip.name!r} has no vector rate for {dtype} or fp32", field="compute.dtype")
    return per_cycle * chip.clock_hz * chip.vector.efficiency


def _compute_cost(chip: Chip, compute: Compute, chained: bool = False) -> tuple[float, float, float, float]:
    """(matrix_s, vector_s, matrix operand bytes from local memory, flops) of one iteration."""
    if compute.unit == "matrix":
        rate = _matrix_rate(chip, compute.dtype, chained)
        useful = compute.flops if compute.useful else 0.0  # recomputed products cost time, count no flops
        if compute.shape is None:
            return compute.flops / rate, 0.0, 0.0, useful
        m, n, k = compute.shape
        seconds = compute.count * executed_matrix_flops(chip, compute.shape) / rate
        if compute.pair > chip.matrix.pair:
            raise InputError(f"chip {chip.name!r} cannot span one MMA over {compute.pair} programs "
                             f"(matrix_unit.pair is {chip.matrix.pair})", field="compute.pair")
        a_reads, b_reads = operand_reads(chip, m, n)
        if compute.a_in_tensor_memory:
            if not chip.local.tensor_memory_bytes:
                raise InputError(f"chip {chip.name!r} has no tensor memory to read an MMA's A operand from",
                                 field="compute.a_in_tensor_memory")
            a_reads = 0
        operand_bytes = compute.count * (m * k * a_reads + k * n / compute.pair * b_reads) * DTYPE_BYTES[compute.dtype]
        return seconds, 0.0, operand_bytes, useful
    if compute.unit == "vector":
        useful = compute.flops if compute.useful else 0.0
        return 0.0, compute.flops / _vector_rate(chip, compute.dtype), 0.0, useful
    rate = chip.vector.special_function_ops_per_cycle_per_core * chip.clock_hz * chip.vector.efficiency
    return 0.0, compute.flops / rate, 0.0, 0.0


def program_costs(trace: KernelTrace, chip: Chip) -> ProgramCosts:
    n = trace.num_programs
    variables = program_vars(trace)
    template_of = program_templates(trace)
    acc = {key: np.zeros(n) for key in (
        "iterations", "read_iterations", "flops", "matrix_flops", "special_ops", "matrix_s", "vector_s",
        "special_s", "overlapped_s", "local_bytes", "staged_bytes", "read_bytes", "write_bytes", "pinned_bytes",
        "cache_bytes",
    )}
    fill = np.full(n, -1.0)
    drain, drain_cache = np.zeros(n), np.zeros(n)
    for t_index, template in enumerate(trace.templates):
        members = template_members(template_of, t_index)
        if _count(members) == 0:
            continue
        for step in template.steps:
            reps = repeats(step, variables, members).astype(float)
            moved = {d: sum(x.bytes for x in step.transfers if x.direction == d and x.level != "local")
                     for d in ("read", "write")}
            runs = members if reps.min(initial=1.0) > 0 else np.arange(n)[members][reps > 0]
            if moved["read"]:
                fill[runs] = np.where(fill[runs] < 0, moved["read"], fill[runs])
            if moved["write"]:
                drain[runs] = moved["write"]
                drain_cache[runs] = sum(x.bytes for x in step.transfers
                                        if x.direction == "write" and x.level == "shared_cache")
            per_iter = dict.fromkeys(acc, 0.0)
            per_iter["iterations"] = 1.0
            per_iter["read_iterations"] = float(any(x.direction == "read" for x in step.transfers))
            chained = is_chained(step)
            for compute in step.compute:
                matrix_s, vector_s, operand_bytes, flops = _compute_cost(chip, compute, chained)
                per_iter["matrix_s"] += matrix_s
                per_iter["special_s" if compute.unit == "special" else "vector_s"] += vector_s
                if compute.overlapped:
                    per_iter["overlapped_s"] += vector_s
                per_iter["local_bytes"] += operand_bytes
                per_iter["flops"] += flops
                if compute.unit == "matrix":
                    per_iter["matrix_flops"] += flops
                if compute.unit == "special":
                    per_iter["special_ops"] += compute.flops
            for transfer in step.transfers:
                per_iter["local_bytes"] += transfer.bytes
                if transfer.level == "hbm":
                    per_iter["read_bytes" if transfer.direction == "read" else "write_bytes"] += transfer.bytes
                elif transfer.level == "shared_cache":
                    per_iter["pinned_bytes"] += transfer.bytes
                else:
                    per_iter["staged_bytes"] += transfer.bytes
                if transfer.level != "local":
                    shared = transfer.multicast if transfer.direction == "read" else 1
                    per_iter["cache_bytes"] += transfer.bytes / shared
            for key, value in per_iter.items():
                if value:
                    acc[key][members] += reps * value
    special = acc.pop("special_s")
    issued = acc["vector_s"] + special
    acc["vector_s"] = issued if isinstance(chip, TpuChip) else np.maximum(acc["vector_s"], special)
    return ProgramCosts(template=template_of, fill_bytes=np.maximum(fill, 0.0), drain_bytes=drain,
                        drain_cache_bytes=drain_cache,
                        issued_vector_s=issued, **execution_arrays(trace, chip), **acc)


def execution_arrays(trace: KernelTrace, chip: Chip) -> dict[str, np.ndarray]:
    """Per program, what the trace's ``kernel.execution`` changes (:class:`ProgramCosts`'s
    ``follows``, ``prefetched``, ``drain_hidden``, ``drain_in_step``, ``extra_load_latency_s`` and
    ``thread_loads``)."""
    n = trace.num_programs
    execution = trace.kernel.execution
    if execution is None or not isinstance(chip, GpuChip):
        zeros = np.zeros(n)
        return {"follows": zeros, "prefetched": zeros, "drain_hidden": zeros, "drain_in_step": zeros,
                "extra_load_latency_s": zeros, "thread_loads": np.ones(n)}
    follows = np.zeros(n)
    if execution.persistent_ctas is not None:
        follows[execution.persistent_ctas:] = 1.0
    hidden = follows if execution.epilogue == "overlapped" else np.zeros(n)
    in_step = execution.epilogue == "exposed" and execution.persistent_ctas is not None
    extra = chip.local.bulk_copy_latency_s if execution.loads == "tma" else 0.0
    prefetched = follows if execution.next_loads == "prefetched" else np.zeros(n)
    return {"follows": follows, "prefetched": prefetched, "drain_hidden": hidden,
            "drain_in_step": np.full(n, float(in_step)), "extra_load_latency_s": np.full(n, extra),
            "thread_loads": np.full(n, float(execution.loads != "tma"))}
