"""Kernel trace format, version 1: one kernel launch on one chip, GPU or TPU.

A trace says *what a kernel does*, not how long it takes: its grid of programs
(GPU CTAs / Pallas grid steps), the resources each program holds, and per program
an ordered list of steps with memory transfers (bytes, direction, memory level and
block identity) and compute (flops by unit and dtype, with the operand shape).

Compactness: programs share **templates** (step lists). A step may repeat, with a
loop variable, and block indices are integers or variable names; per-program
values come from **program variables**: the grid coordinates ``p0, p1, ...``
always exist, and ``program_vars`` adds named integer arrays, one entry per
program in launch order. A 10^5-program GEMM is one template and two arrays.

See ``docs/trace-format.md`` for the full description. Traces are data: they are
parsed and validated, never executed.
"""

from __future__ import annotations

import json
import math
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from accelsim.errors import InputError, check_path_text, checked, read_json_file, shown
from accelsim.files import write_text_atomic
from accelsim.text import PathText, PrintableText

TRACE_SCHEMA_VERSION = 1

Dtype = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5, "int4": 0.5,
}
MemoryLevel = Literal["hbm", "shared_cache", "local"]
GRID_VARS = ("p0", "p1", "p2", "p3", "p4", "p5")
MAX_GPU_GRID_AXES = 3
"""A CUDA grid has the axes x, y and z; a Pallas grid may have up to ``len(GRID_VARS)``."""
MAX_GPU_GRID = (2**31 - 1, 65535, 65535)
"""Programs a CUDA grid holds along x, y and z (CUDA programming guide, compute
capability 3.0 and later)."""

MAX_AMOUNT = 1e30
"""The largest flops, bytes or seconds a trace may give one op: far past anything a
run can hold (a simulation ends within 2^63 ps, about 107 days), and far enough below
the float maximum that sums and rates stay finite."""
MAX_COUNT = 2**48
"""No count in a trace (bytes, a shape, a block index, a grid axis) exceeds 2^48: the
engine's arithmetic is 64-bit, and products of such counts must stay inside it."""
MAX_PROGRAMS = 2**24
"""Programs of one kernel the engine simulates (about 16.8 million; a 15-million-program
kernel takes some 35 s and 9 GB here). Beyond that, a larger block is the way."""

MAX_STEP_ENTRIES = 2**26
"""Work one kernel trace may describe: over every program, the entries of the steps it
runs (a step, and each of its transfers and computes; a repeated step counts once, as
the engine handles its iterations together). The engine's time and memory grow with
it (about 0.25 us and 110 bytes per entry here): 2^26, some 67 million, is the budget of
:data:`MAX_PROGRAMS` programs of a few entries each (a 9 MB trace of one 10,000-step
template on 2,000 programs took 162 s and 14.5 GB)."""

NonNegInt = Annotated[int, Field(strict=True, ge=0, le=MAX_COUNT)]
PosInt = Annotated[int, Field(strict=True, gt=0, le=MAX_COUNT)]
NonNegNumber = Annotated[float, Field(strict=True, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)]
"""A number written as one (an integer or a float), never a string such as ``"1e12"``."""
StrictBool = Annotated[bool, Field(strict=True)]
Index = Annotated[int, Field(strict=True, ge=0, le=MAX_COUNT)] | str
"""A repeat count: an integer (0 or more) or a variable name."""


def _too_many_programs(count: int) -> str:
    return f"{count:,} programs; accelsim simulates at most {MAX_PROGRAMS:,} (2^24) in one kernel"


def check_programs(count: int, source: str | None = None, field: str | None = "params") -> None:
    """Refuse a kernel of more than :data:`MAX_PROGRAMS` programs before building it; the
    error names what gave the problem (by default a family's ``params``)."""
    if count > MAX_PROGRAMS:
        raise InputError(f"the kernel would have {_too_many_programs(count)}: use larger blocks or a smaller "
                         f"problem", source=source, field=field)


def _no_bool(entry: Any) -> Any:
    if isinstance(entry, bool):  # JSON true is not a block number
        raise ValueError(f"expected an integer, a variable or a sum like 'k0+k', got {json.dumps(entry)}")
    return entry


def _check_block_index(entry: int | str) -> int | str:
    if isinstance(entry, int) and not 0 <= entry <= MAX_COUNT:
        raise ValueError(f"expected a block index from 0 to 2^48, got {entry}")
    if isinstance(entry, str):
        terms = index_terms(entry)
        if not terms:
            raise ValueError(f"expected an integer, a variable or a sum like 'k0+k', got {shown(entry)}")
    return entry


BlockIndex = Annotated[int | str, BeforeValidator(_no_bool), AfterValidator(_check_block_index)]
"""A block index entry: an integer, a variable name, or a sum of them (``"k0+k"``)."""


def index_terms(entry: str) -> list[int | str]:
    """``"k0+k+1"`` -> ``["k0", "k", 1]``; ``[]`` if any term is neither."""
    terms: list[int | str] = []
    for raw in entry.split("+"):
        term = raw.strip()
        if term.isidentifier():
            terms.append(term)
        elif term.isdigit() and len(term) <= 15:  # below MAX_COUNT
            terms.append(int(term))
        else:
            return []
    return terms


def _identifier(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"expected an identifier (letters, digits, _), got {shown(name)}")
    return name


Identifier = Annotated[str, AfterValidator(_identifier)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tensor(_Strict):
    shape: list[PosInt]
    dtype: Dtype


class Transfer(_Strict):
    """A block moved between a memory level and the program's local memory."""

    tensor: Identifier
    block: list[BlockIndex] = []
    """Block index along each leading tensor axis: integers, variable names or sums of them.
    Axes past the last index are spanned whole (``[]``: the whole tensor is one block)."""
    bytes: PosInt
    direction: Literal["read", "write"] = "read"
    level: MemoryLevel = "hbm"
    """Where the block lives: ``hbm`` (global memory, cached in L2/CMEM where the chip has
    it), ``shared_cache`` (pinned there), ``local`` (shared memory / VMEM to registers)."""
    multicast: PosInt = 1
    """Reads: how many programs of a cluster this read is multicast to (each program lists
    it; the shared cache serves it once for all of them, each program still receives all
    its bytes). 1: an ordinary read."""

    @model_validator(mode="after")
    def _multicast_reads_only(self) -> "Transfer":
        if self.multicast > 1 and self.direction != "read":
            raise ValueError("multicast: only a read is multicast (a write has multicast 1)")
        return self


class Compute(_Strict):
    unit: Literal["matrix", "vector", "special"]
    flops: NonNegNumber
    """Useful floating-point (or integer) operations; for ``special``, function evaluations."""
    dtype: Dtype = "fp32"
    shape: list[PosInt] | None = None
    """Matrix unit only: the [m, n, k] the unit executes (the whole block, masked rows
    included). Its time is ``count * 2*m*n*k`` padded to the unit's granule; without a
    shape, ``flops`` at the unit's rate."""
    count: PosInt = 1
    """Matrix unit only: how many times the ``shape`` operation runs (batched matmuls)."""
    pair: PosInt = 1
    """Matrix unit only: the operation is this program's part of an MMA spanning ``pair``
    programs on neighbouring SMs (Blackwell's 2-SM MMA), whose B operand (``k x n`` of
    the ``shape``) is split between their shared memories: the program reads ``k x n /
    pair`` of it from its own. 1: an ordinary MMA."""
    a_in_tensor_memory: StrictBool = False
    """Matrix unit only: the A operand (``m x k``) is read from tensor memory, where an earlier
    step's work left it (Blackwell's ``tcgen05.mma`` takes A from tensor memory or shared
    memory, B from shared memory only: PTX ISA, ``tcgen05.mma``), so it moves no local-memory
    bytes. False: A is read from local memory."""
    useful: StrictBool = True
    """False for work that costs time but is not counted as flops (e.g. adding a GEMM's
    partial sums into its accumulator: those adds are already in 2*M*N*K)."""
    overlapped: StrictBool = False
    """Vector or special work that the program issues in the shadow of its MMAs (a
    warp-specialized kernel's softmax arithmetic, software-pipelined against the next
    tile's MMA): it loads its unit's pipe like any work, but the program's instruction
    streams do not wait on it (it stays off :func:`accelsim.engine.chip.gpu_program_times`'
    ``chain``)."""

    @model_validator(mode="after")
    def _tensor_memory_operand_on_matrix_work(self) -> "Compute":
        if self.a_in_tensor_memory and self.unit != "matrix":
            raise ValueError("a_in_tensor_memory: only a matrix operation reads an operand from tensor memory")
        return self

    @model_validator(mode="after")
    def _pair_on_shaped_matrix_work(self) -> "Compute":
        if self.pair > 1 and (self.unit != "matrix" or self.shape is None):
            raise ValueError("pair: only a matrix operation with a shape can span several programs")
        return self

    @model_validator(mode="after")
    def _flops_within_shape(self) -> "Compute":
        if self.shape is not None and len(self.shape) == 3:
            m, n, k = self.shape
            most = self.count * 2 * m * n * k
            if self.flops > most * (1 + 1e-9):
                raise ValueError(f"flops: {self.flops:g} is more than the shape computes "
                                 f"(count x 2*m*n*k = {most:g})")
        return self


class Step(_Strict):
    repeat: Index = 1
    loop_var: Identifier | None = None
    """Name of the 0-based iteration index, usable in block indices of this step."""
    chained: StrictBool | None = None
    """Whether the step's MMAs wait on its vector work (run at ``matrix_unit.chained_efficiency``).
    None: inferred from the work it lists (``accelsim.engine.programs.is_chained``); a kernel
    whose MMAs are issued asynchronously ahead of the softmax that needs them (FlashAttention-3's
    warp-specialized consumers) says False."""
    transfers: list[Transfer] = []
    compute: list[Compute] = []


class Template(_Strict):
    name: Identifier
    steps: list[Step] = Field(min_length=1)


class Resources(_Strict):
    local_memory_bytes: NonNegInt = 0
    """Shared memory (GPU) or VMEM scratch + buffers (TPU) one program holds."""
    warps: PosInt = 4
    registers_per_thread: PosInt | None = None
    tensor_memory_bytes: NonNegInt = 0
    """GPU: tensor memory (Blackwell's TMEM) one program's accumulators hold."""


class Execution(_Strict):
    """How a GPU runs a trace's programs beyond what their steps say: the Hopper and Blackwell
    SM mechanisms of ``docs/engine.md`` ("Hopper and Blackwell SM mechanisms"). Absent: every
    program is a CTA of its own whose threads issue their loads and MMAs in turn."""

    loads: Literal["threads", "tma"] = "threads"
    """Who issues a program's loads: its own threads (``ld``/``cp.async``), or a producer
    warp through the tensor memory accelerator (``cp.async.bulk.tensor``), whose copies take
    the chip's ``local_memory.bulk_copy_latency`` on top of a load's latency."""
    consumers: PosInt | None = None
    """Warp specialization: the consumer warpgroups that issue a program's MMAs and vector
    work; the producer warps that issue its loads issue none (CUTLASS's warp-specialized
    kernels, FlashAttention-3: 2). Absent: the program's warps over the matrix units, each
    warpgroup one instruction stream."""
    consumer_chains: Literal["separate", "shared"] = "separate"
    """How the consumers' dependency chains (MMAs and the CUDA-core work that waits on them)
    overlap one another. ``separate``: each consumer is an instruction stream, and one's MMAs
    run while another waits (CUTLASS's GEMMs: ``chain = (matrix + vector) / consumers``);
    ``shared``: the consumers take turns, so the program has one chain (FlashAttention-3's
    forward as its measured throughput shows it, docs/kernels-attention.md)."""
    persistent_ctas: PosInt | None = None
    """Persistent kernels: the programs are work units (output tiles) that this many CTAs
    walk in launch order (a tile scheduler hands CTA ``c`` the units ``c``, ``c + ctas``,
    ...). The first ``ctas`` units each start a CTA; a later unit follows another on its CTA,
    so it pays no CTA launch (``cores.program_overhead``), and where its first loads were
    prefetched (``next_loads``) neither its first load's latency nor the fill at the port.
    Absent: one CTA per program."""
    epilogue: Literal["exposed", "overlapped"] = "exposed"
    """Persistent kernels: a following unit's epilogue (its last stores). ``exposed``: the
    consumers drain their accumulators and wait for the tile's store out of shared memory
    before the next unit's MMAs start (cooperative kernels, DeepGEMM); the persistent CTAs run
    their units in step, so every SM stores at once and the store drains at one SM's share of
    HBM. ``overlapped``: another consumer's main loop runs meanwhile (ping-pong kernels), so
    the drain costs the unit nothing."""
    next_loads: Literal["prefetched", "after_store"] = "prefetched"
    """Persistent kernels: when a following unit's first loads are issued. ``prefetched``: while
    the unit before computes (its producer runs ahead), so the unit pays neither their latency
    nor the fill at the port. ``after_store``: the producer issues them only once the unit before
    has finished and its tile's store has left shared memory (the buffers are shared, FlashAttention-3's
    fp8 forward), so the unit pays its first load's latency and the fill, after the drain; it
    still pays no CTA launch. Only with ``persistent_ctas`` (without them no unit follows another)."""

    @model_validator(mode="after")
    def _after_store_needs_persistent_ctas(self) -> "Execution":
        if self.next_loads == "after_store" and self.persistent_ctas is None:
            raise ValueError("next_loads: 'after_store' applies to the units of persistent CTAs; give persistent_ctas")
        return self


LEGACY_STREAMS = "mma_streams"
"""A program's resources named its consumer streams ``mma_streams`` until 2026-12-09; traces
that say so read it as ``execution.consumers`` (:meth:`Kernel._read_legacy_streams`)."""


class Kernel(_Strict):
    name: PrintableText
    grid: list[PosInt] = Field(min_length=1, max_length=6)
    """Programs along each axis (GPU: up to 3; a Pallas grid may have more)."""
    launch_order: Literal["first_axis_fastest", "last_axis_fastest"] = "first_axis_fastest"
    """GPU CTAs launch with x (axis 0) fastest; a Pallas grid runs with the last axis fastest."""
    dimension_semantics: list[Literal["parallel", "arbitrary"]] | None = None
    """TPU: which grid axes may be split across the TensorCores of a megacore chip."""
    resources: Resources = Resources()
    pipeline_depth: PosInt = 2
    """How many step's transfers can be in flight (GPU ``num_stages``, TPU buffer count)."""
    kernel_starts: list[PosInt] | None = None
    """Several kernels run back to back in one trace (a backward pass's kernels): the launch
    positions where a new kernel begins. Every program before one finishes before any
    program from it starts; on a TPU the pipeline starts anew there."""
    execution: Execution | None = None
    """GPU: warp specialization, TMA loads, persistent work units (:class:`Execution`)."""
    kernel_resources: list[Resources] | None = None
    """With ``kernel_starts``: what one program of each later kernel holds, one entry per
    entry of ``kernel_starts`` (the first kernel's programs hold ``resources``). A
    backward pass's elementwise kernels fit many programs on an SM where its main kernel
    fits one. Absent: every kernel's programs hold ``resources``."""

    @model_validator(mode="before")
    @classmethod
    def _read_legacy_streams(cls, data: Any) -> Any:
        """A trace of version 1 written before 2026-12-09 may give ``mma_streams`` in a kernel's
        resources: the instruction streams of a program, which the consumers count now says
        (``chain / streams`` either way; kernels without matrix work, the only others a trace
        held, are unaffected by it). Read as ``execution.consumers`` unless that is given."""
        if not isinstance(data, dict):
            return data
        later = data.get("kernel_resources")
        entries = [data.get("resources"), *(later if isinstance(later, list) else [])]
        streams = [entry[LEGACY_STREAMS] for entry in entries if isinstance(entry, dict) and LEGACY_STREAMS in entry]
        if not streams:
            return data

        def without(entry: Any) -> Any:
            return {k: v for k, v in entry.items() if k != LEGACY_STREAMS} if isinstance(entry, dict) else entry

        data = {**data, "resources": without(data.get("resources", {}))}
        if isinstance(later, list):
            data["kernel_resources"] = [without(entry) for entry in later]
        given = [s for s in streams if s is not None]
        bad = next((s for s in given if type(s) is not int or not 0 < s <= MAX_COUNT), None)
        if bad is not None:
            raise ValueError(f"resources.{LEGACY_STREAMS}: expected a positive integer, got "
                             f"{json.dumps(bad, default=repr)[:40]}")
        execution = data.get("execution")
        if given and (execution is None or isinstance(execution, dict)):
            data["execution"] = {"consumers": max(given), **(execution or {})}
        return data


class KernelTrace(_Strict):
    schema_version: Literal[1]
    kind: Literal["kernel_trace"] = "kernel_trace"
    kernel: Kernel
    tensors: dict[Identifier, Tensor]
    templates: list[Template] = Field(min_length=1)
    program_template: Identifier | list[NonNegInt] | None = None
    """The template every program runs (a name), or a template index per program. Default:
    the only template."""
    program_vars: dict[Identifier, list[Annotated[int, Field(strict=True)]]] = {}
    """Named per-program integers, one per program in launch order."""
    metadata: dict[str, Any] = {}
    """Free-form: family, parameters, config, generator or capture tool."""

    @property
    def num_programs(self) -> int:
        count = 1
        for n in self.kernel.grid:
            count *= n
        return count

    @property
    def resources_by_kernel(self) -> list[Resources]:
        """What one program of each kernel of the trace holds, in launch order."""
        later = self.kernel.kernel_resources
        return [self.kernel.resources, *(later if later is not None else
                                         [self.kernel.resources] * len(self.kernel.kernel_starts or []))]

    @model_validator(mode="after")
    def _consistent(self) -> "KernelTrace":
        n = self.num_programs
        if n > MAX_PROGRAMS:
            raise ValueError(f"kernel.grid: {_too_many_programs(n)}")
        names = [t.name for t in self.templates]
        if len(set(names)) != len(names):
            raise ValueError("template names must be unique")
        family = self.metadata.get("family")
        if family is not None and not isinstance(family, str):  # the one metadata key the simulator reads
            raise ValueError(f"metadata.family: expected a kernel family name (a string), got {shown(family)}")
        for var, values in self.program_vars.items():
            if var in GRID_VARS:
                raise ValueError(f"program_vars.{var}: {shown(var)} is reserved for the grid coordinate")
            if len(values) != n:
                raise ValueError(f"program_vars.{var}: expected {n} values (one per program), got {len(values)}")
            if values and max(abs(min(values)), abs(max(values))) > MAX_COUNT:
                raise ValueError(f"program_vars.{var}: expected values from -2^48 to 2^48, got "
                                 f"{max(values, key=abs)}")
        pt = self.program_template
        if pt is None and len(self.templates) > 1:
            raise ValueError("program_template: required when there is more than one template")
        if isinstance(pt, str) and pt not in names:
            raise ValueError(f"program_template: unknown template {shown(pt)}; expected one of: {', '.join(names)}")
        if isinstance(pt, list):
            if len(pt) != n:
                raise ValueError(f"program_template: expected {n} entries (one per program), got {len(pt)}")
            if pt and max(pt) >= len(self.templates):
                raise ValueError(f"program_template: index {max(pt)} but only {len(self.templates)} templates")
        sem = self.kernel.dimension_semantics
        if sem is not None and len(sem) != len(self.kernel.grid):
            raise ValueError("kernel.dimension_semantics: needs one entry per grid axis")
        starts = self.kernel.kernel_starts
        if starts is not None and (any(b <= a for a, b in pairwise(starts)) or (starts and starts[-1] >= n)):
            raise ValueError(f"kernel.kernel_starts: expected increasing launch positions below {n} (the programs)")
        more = self.kernel.kernel_resources
        if more is not None and len(more) != len(starts or []):
            raise ValueError(f"kernel.kernel_resources: expected one entry per entry of kernel.kernel_starts "
                             f"({len(starts or [])}), got {len(more)}")
        known = set(GRID_VARS[: len(self.kernel.grid)]) | set(self.program_vars)
        for ti, template in enumerate(self.templates):
            for si, step in enumerate(template.steps):
                where = f"templates[{ti}].steps[{si}]"
                local = known | ({step.loop_var} if step.loop_var else set())
                if isinstance(step.repeat, str) and step.repeat not in known:
                    raise ValueError(f"{where}.repeat: unknown variable {shown(step.repeat)}")
                for xi, transfer in enumerate(step.transfers):
                    if transfer.tensor not in self.tensors:
                        raise ValueError(f"{where}.transfers[{xi}].tensor: unknown tensor {shown(transfer.tensor)}")
                    for index in transfer.block:
                        for term in index_terms(index) if isinstance(index, str) else ():
                            if isinstance(term, str) and term not in local:
                                raise ValueError(f"{where}.transfers[{xi}].block: unknown variable {shown(term)}")
                for ci, compute in enumerate(step.compute):
                    if compute.unit == "matrix" and compute.shape is not None and len(compute.shape) != 3:
                        raise ValueError(f"{where}.compute[{ci}].shape: expected [m, n, k]")
        return self


def check_blocks(trace: KernelTrace) -> None:
    """Every transfer of a trace read from a file moves one block of its tensor: at most one
    index per tensor axis, each index that a program running the step reaches inside the
    axis, and no more bytes than the whole tensor in a step some program runs. Raises
    ``ValueError("field.path: ...")``.

    Asked where a trace file is read; the families' traces pass it too (tested), and are
    not asked again each time a config search builds one."""
    ranges = {GRID_VARS[axis]: (0, size - 1) for axis, size in enumerate(trace.kernel.grid)}
    ranges.update({name: (min(values), max(values)) for name, values in trace.program_vars.items()})
    per_program = cache(lambda: _per_program(trace))  # built only if a range is in doubt
    for ti, template in enumerate(trace.templates):
        members = cache(lambda ti=ti: _members(per_program(), ti))  # the template's programs, found once
        for si, step in enumerate(template.steps):
            for xi, transfer in enumerate(step.transfers):
                at = f"templates[{ti}].steps[{si}].transfers[{xi}]"
                tensor = trace.tensors[transfer.tensor]
                _check_block_size(transfer, tensor, at, lambda: _runs(step, ranges, members))
                _check_block_indices(transfer, tensor, at, step, ranges, members)


def _runs(step: Step, ranges: dict[str, tuple[int, int]], members) -> bool:
    """Does some program of the step's template run it at least once?"""
    if isinstance(step.repeat, int):
        return step.repeat > 0
    if ranges[step.repeat][1] <= 0:
        return False
    programs, variables = members()
    return bool(programs.size) and int(variables[step.repeat][programs].max()) > 0


def _tensor_bytes(tensor: Tensor) -> int:
    """Bytes the whole tensor holds (sub-byte dtypes packed, rounded up to a byte)."""
    return math.ceil(math.prod(tensor.shape) * DTYPE_BYTES[tensor.dtype])


def _check_block_size(transfer: Transfer, tensor: Tensor, at: str, runs) -> None:
    """A transfer moves one block of its tensor: at most one index per tensor axis, and no
    more bytes than the whole tensor holds (asked only if ``runs()``: a step no program
    runs moves nothing)."""
    if len(transfer.block) > len(tensor.shape):
        axes = len(tensor.shape)
        raise ValueError(f"{at}.block: expected at most {axes} {'index' if axes == 1 else 'indices'}, one per axis "
                         f"of tensor {shown(transfer.tensor)} (shape {tensor.shape}), got {len(transfer.block)}")
    size = _tensor_bytes(tensor)
    if transfer.bytes > size and runs():
        raise ValueError(f"{at}.bytes: expected at most {size:,}, the whole of tensor {shown(transfer.tensor)} "
                         f"(shape {tensor.shape}, {tensor.dtype}), got {transfer.bytes:,}")


def _check_block_indices(transfer: Transfer, tensor: Tensor, at: str, step: Step,
                         ranges: dict[str, tuple[int, int]], members) -> None:
    """Every block index the programs running ``step`` reach lies inside the tensor: from 0
    to the axis length - 1 (a block holds at least one element). ``members()``: the
    programs that run the step's template, with every variable's per-program values;
    asked only when the variables' ranges alone do not settle it."""
    most = step.repeat if isinstance(step.repeat, int) else ranges[step.repeat][1]
    if most <= 0:
        return  # no program runs the step
    for axis, entry in enumerate(transfer.block):
        length = tensor.shape[axis]
        low, high = _index_range(entry, step.loop_var, most - 1, ranges)
        if 0 <= low and high < length:
            continue
        reached = (low, None, None) if isinstance(entry, int) else _out_of_range(entry, step, length, *members())
        if reached is not None:
            value, program, iteration = reached
            place = "" if program is None else f" ({shown(entry)} in program {program}" + (
                f", {step.loop_var} = {iteration})" if iteration is not None else ")")
            raise ValueError(f"{at}.block[{axis}]: expected a block index from 0 to {length - 1} (tensor "
                             f"{shown(transfer.tensor)} has {length} elements along axis {axis}), got {value}{place}")


def _index_range(entry: int | str, loop_var: str | None, last_iteration: int,
                 ranges: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """Bounds on a block index entry from each term's own range (programs need not reach
    every term's extreme together, so an entry may stay well inside them)."""
    if isinstance(entry, int):
        return entry, entry
    low = high = 0
    for term in index_terms(entry):
        if isinstance(term, int):
            low, high = low + term, high + term
        elif term == loop_var:
            high += last_iteration
        else:
            low, high = low + ranges[term][0], high + ranges[term][1]
    return low, high


def _out_of_range(entry: str, step: Step, length: int, members: np.ndarray,
                  variables: dict[str, np.ndarray]) -> tuple[int, int, int | None] | None:
    """The lowest value below 0, else the highest from ``length``, that ``entry`` takes in
    the programs ``members`` over the iterations of ``step``: (value, program, iteration,
    None when the entry has no loop variable); None if it stays inside."""
    repeats = (np.full(len(members), step.repeat, dtype=np.int64) if isinstance(step.repeat, int)
               else variables[step.repeat][members])
    programs, repeats = members[repeats > 0], repeats[repeats > 0]
    terms = index_terms(entry)
    first = np.zeros(len(programs), dtype=np.int64)
    for term in terms:
        if isinstance(term, int):
            first += term
        elif term != step.loop_var:
            first += variables[term][programs]
    loops = terms.count(step.loop_var) if step.loop_var else 0
    last = first + loops * (repeats - 1)
    if programs.size and first.min() < 0:
        at = int(np.argmin(first))
        return int(first[at]), int(programs[at]), 0 if loops else None
    if programs.size and last.max() >= length:
        at = int(np.argmax(last))
        return int(last[at]), int(programs[at]), int(repeats[at] - 1) if loops else None
    return None


def _per_program(trace: KernelTrace) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each program's template index and variables (grid coordinates and ``program_vars``),
    in launch order."""
    n = trace.num_programs
    pid = np.arange(n, dtype=np.int64)
    grid = trace.kernel.grid
    axes = range(len(grid)) if trace.kernel.launch_order == "first_axis_fastest" else reversed(range(len(grid)))
    variables, stride = {}, 1
    for axis in axes:
        variables[GRID_VARS[axis]] = (pid // stride) % grid[axis]
        stride *= grid[axis]
    variables.update({name: np.asarray(values, dtype=np.int64) for name, values in trace.program_vars.items()})
    chosen = trace.program_template
    if isinstance(chosen, list):
        return np.asarray(chosen, dtype=np.int64), variables
    names = [template.name for template in trace.templates]
    return np.full(n, names.index(chosen) if chosen is not None else 0, dtype=np.int64), variables


def _members(per_program: tuple[np.ndarray, dict[str, np.ndarray]], template: int) -> tuple:
    """(the programs that run ``template``, every variable's per-program values)."""
    template_of, variables = per_program
    return np.nonzero(template_of == template)[0], variables


def check_gpu_grid(trace: KernelTrace, chip_name: str) -> None:
    """Refuse a grid a GPU cannot launch: CUDA grids have at most three axes, of at most
    :data:`MAX_GPU_GRID` programs each (a TPU's Pallas grid may have more axes and larger
    ones, so this is asked when the chip is known)."""
    grid = trace.kernel.grid
    if len(grid) > MAX_GPU_GRID_AXES:
        raise InputError(f"expected at most {MAX_GPU_GRID_AXES} axes on {chip_name}, a GPU (CUDA grids are x, y, z), "
                         f"got {len(grid)}: {grid} (merge axes, or simulate it on a TPU)", field="kernel.grid")
    for axis, (size, most) in enumerate(zip(grid, MAX_GPU_GRID)):
        if size > most:
            raise InputError(f"expected at most {most:,} programs along axis {axis} ({'xyz'[axis]}) on {chip_name}, "
                             f"a GPU, got {size:,}: {grid} (CUDA launches no larger grid)", field="kernel.grid")


def parse_trace(data: Any, source: str) -> KernelTrace:
    """Validate decoded JSON as a kernel trace; bad input raises a located InputError."""
    if not isinstance(data, dict):
        raise InputError("expected a JSON object (a kernel trace)", source=source)
    version = data.get("schema_version")
    if type(version) is not int or version != TRACE_SCHEMA_VERSION:
        raise InputError(
            f"unsupported schema_version {shown(version)}; this accelsim reads version {TRACE_SCHEMA_VERSION}",
            source=source,
            field="schema_version",
        )
    try:
        trace = KernelTrace.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise InputError(error_message(error), source=source, field=_user_loc(error["loc"]) or None) from None
    check_work(trace, source)
    return checked(check_blocks, trace, source)


def step_entries(trace: KernelTrace) -> int:
    """The work a trace describes (:data:`MAX_STEP_ENTRIES`), counted from the templates and
    how many programs run each, before anything is expanded per program."""
    per_template = [sum(1 + len(step.transfers) + len(step.compute) for step in template.steps)
                    for template in trace.templates]
    chosen = trace.program_template
    if isinstance(chosen, list):
        runs = np.bincount(np.asarray(chosen, dtype=np.int64), minlength=len(per_template))
        return int(np.dot(runs, np.asarray(per_template, dtype=np.int64)))
    names = [template.name for template in trace.templates]
    return trace.num_programs * per_template[names.index(chosen) if chosen is not None else 0]


def check_work(trace: KernelTrace, source: str) -> None:
    """Refuse a trace that describes more work than :data:`MAX_STEP_ENTRIES`, before any of it
    is done (the block checks, too, run per program and step)."""
    entries = step_entries(trace)
    if entries > MAX_STEP_ENTRIES:
        raise InputError(f"the trace describes {entries:,} step entries ({trace.num_programs:,} programs x the steps, "
                         f"transfers and computes of their templates); accelsim simulates at most "
                         f"{MAX_STEP_ENTRIES:,} (2^26) in one kernel: use a repeat for a loop, or fewer programs",
                         source=source)


def error_message(error: dict) -> str:
    """One pydantic error as a trace reader says it: a missing or unknown field in words,
    and for a value of the wrong type (``"1e12"`` where a number belongs) what was given."""
    if error["type"] == "missing":
        return "missing required field"
    if error["type"] == "extra_forbidden":
        return "unknown field"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] in ("less_than_equal", "greater_than_equal", "greater_than", "less_than"):
        ctx = error.get("ctx", {})
        bound = next((ctx[key] for key in ("le", "ge", "gt", "lt") if key in ctx), None)
        words = {"less_than_equal": "at most", "greater_than_equal": "at least", "greater_than": "more than",
                 "less_than": "less than"}[error["type"]]
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            limit = f"{bound:g}" if isinstance(bound, float) else str(bound)
            message = f"expected a number {words} {limit}, got {shown(error['input'])}"
    if error["type"].endswith("_type"):
        given = error["input"]
        as_json = ("a list" if isinstance(given, list) else "an object" if isinstance(given, dict)
                   else json.dumps(given, default=repr))
        message += f", got {as_json if len(as_json) <= 40 else as_json[:37] + '...'}"
    return message


UNION_FIELDS = ("program_template", "repeat", "block")
"""Fields typed as unions; pydantic names the union member tried after them in an error
location (``int``, ``str``, ``list[...]``), which the user never wrote."""


def _user_loc(loc: tuple) -> list:
    out: list = []
    for i, part in enumerate(loc):
        if part == "[key]":
            continue
        parent = loc[i - 1] if i >= 1 else None
        grandparent = loc[i - 2] if i >= 2 else None
        after_union = parent in UNION_FIELDS or (grandparent == "block" and isinstance(parent, int))
        if after_union and isinstance(part, str) and not part.isidentifier() or (after_union and part in ("int", "str")):
            continue
        out.append(part)
    return out


def load_trace(path: str | Path) -> KernelTrace:
    data = read_json_file(path, "trace")
    return parse_trace(data, str(path))


def save_trace(trace: KernelTrace, path: str | Path) -> None:
    """Write compact JSON, atomically (a temporary file renamed into place)."""
    write_text_atomic(path, trace.model_dump_json(exclude_defaults=False))
