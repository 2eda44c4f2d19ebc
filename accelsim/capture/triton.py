"""Capture a kernel trace from a Triton kernel, run on the CPU in Triton's interpreter.

``capture_triton("kernels/triton/matmul.py", "run", {"M": "512", ...})`` imports the
file with ``TRITON_INTERPRET=1``, calls ``run(M=512, ...)``, which must launch exactly
one Triton kernel, and watches that launch through hooks on the interpreter's builder:

- every program instance (the grid executor's calls), in launch order (axis 0 fastest);
- every load and store (masked, plain, descriptor, atomic): the kernel argument whose
  memory holds the addresses, the bytes of the masked-in elements, and the block
  identity (the tile's first element's coordinates divided by the tile's extent along
  each tensor axis);
- every dot: its ``[m, n, k]`` shape, input dtype and *useful* flops: the products
  whose operand elements a load masked in (a computed operand, such as attention's
  ``p``, counts its nonzero elements) and whose output element no ``tl.where`` replaces
  by a constant, so ragged tiles and causal masks count only their valid part and zeros
  in the data count in full;
- elementwise floating-point work on blocks (one vector flop per output element, two
  for an fma, one per input element of a reduction), transcendentals (exp, exp2, log,
  sqrt, rsqrt, ... as ``special``), and float conversions and selects as vector work
  that is not flops; integer and address arithmetic and scalar work are not counted;
- loops (``tl.range``, ``tl.static_range`` and ``range`` in the kernel's module).

Steps are loop iterations: each iteration of a loop is one step, code outside loops is a
step of its own (split after each dot), so a program's steps are what Triton's software
pipeliner overlaps. Consecutive identical steps (same tensors, bytes and compute) whose
block indices advance by 0 or 1 per iteration become one step with ``repeat`` and a loop
variable; programs with the same steps share a template; block indices and repeat counts
that differ between programs become ``program_vars``.

Capture time: a few programs of each class run (:mod:`accelsim.capture.triton_classes`:
classes by where the prologue's integers sit in their ranges, the other programs
replicated), and each innermost loop of more than three iterations runs only iterations
``0`` and ``n-1`` (and ``n-2`` when the last one differs: a masked tail), the rest
interpolated; the first and last program of each group with the same steps then run in
full and must agree with their interpolation, or the whole group runs in full. See
``docs/capture-triton.md``.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import inspect
import math
import os
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accelsim.capture.common import check_language, load_function, typed_params
from accelsim.capture.triton_classes import (
    REPRESENTATIVES,
    FeatureProbe,
    ProbeDone,
    evaluate_fit,
    held_out,
    integer_fit,
    program_classes,
    representatives,
)
from accelsim.capture.triton_compile import KernelCall
from accelsim.errors import InputError, shown
from accelsim.families.rowwise import (
    FP32_BYTES,
    MAX_REGISTERS_PER_THREAD,
    REGISTERS_OVERHEAD,
    REGISTERS_PER_DOT,
)
from accelsim.trace.kernel import KernelTrace

WARP_SIZE = 32
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
"""Triton's launch defaults on NVIDIA GPUs."""
COMPRESS_ABOVE = 3
"""Loops with more iterations than this run only iterations 0 and n-1 (and n-2 when n-1
differs from 0)."""
LOOP_VAR = "i"

VECTOR_OPS = {
    "create_fadd": 1, "create_fsub": 1, "create_fmul": 1, "create_fdiv": 1, "create_frem": 1, "create_fneg": 1,
    "create_precise_divf": 1, "create_minimumf": 1, "create_maximumf": 1, "create_minnumf": 1,
    "create_maxnumf": 1, "create_fabs": 1, "create_floor": 1, "create_ceil": 1, "create_fma": 2, "create_clampf": 2,
}
"""Builder calls counted as vector flops per output element (when the result is floating point)."""
COMPARE_OPS = tuple(f"create_fcmp{kind}" for kind in (
    "OLT", "OGT", "OLE", "OGE", "OEQ", "ONE", "ULT", "UGT", "ULE", "UGE", "UEQ", "UNE"))
"""Comparisons of floating-point values: vector flops per element."""
SPECIAL_OPS = ("create_exp", "create_exp2", "create_log", "create_log2", "create_sqrt", "create_precise_sqrt",
               "create_rsqrt", "create_sin", "create_cos", "create_erf")
TRACE_DTYPES = {
    "float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "int8", "uint8": "int8",
    "bool": "int8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int16": "fp16", "int32": "fp32", "int64": "fp64",
}
"""torch dtype -> trace dtype. The trace format has no integer types wider than int8:
integer tensors are recorded under the float type of the same width (only bytes matter)."""


def capture_triton(path: str, function: str, params: Mapping[str, str], *, exact: bool = False,
                   compile_for: str | None = None) -> KernelTrace:
    """Run ``function(**params)`` from the Python file ``path`` in Triton's interpreter and
    return the kernel trace of the one kernel it launches.

    ``params`` are strings (``--param K=V``), typed as :func:`accelsim.capture.common.typed_params`
    does. ``exact=True`` runs every loop iteration of every program (slow for big grids).
    ``compile_for`` (``sm_90``) also compiles the launch with Triton's compiler for that
    GPU (no GPU needed, :mod:`accelsim.capture.triton_compile`): the trace's shared memory
    and registers are then the compiler's, and the estimates are kept in its metadata.
    Raises :class:`InputError` naming the file and function when the file or function is
    missing, the call fails, or it launches no kernel or more than one.
    """
    source = f"{path}:{function}"
    recorder = _Recorder(compress=not exact)
    with _interpreter_mode():
        _require_interpreter(source)
        fn = load_function(path, function)
        arguments = typed_params(params)
        try:
            inspect.signature(fn).bind(**arguments)
        except TypeError as exc:
            raise InputError(f"the parameters do not fit: {exc}", source=source) from None
        with _hooks(recorder):
            try:
                fn(**arguments)
            except Exception as exc:  # the user's code or kernel failed: say where, not a traceback
                cause = _input_error_in(exc)
                if cause is not None:
                    raise InputError(cause.message, source=source) from None
                check_language(fn, "triton", source)
                hint = ("; the kernel had been launched: capture skips loop iterations, so its outputs are not "
                        "the kernel's results; check them outside the function capture runs"
                        if recorder.launches else "")
                raise InputError(f"running it failed: {type(exc).__name__}: {exc}{hint}", source=source) from None
            except SystemExit as exc:  # not a success: no trace was captured
                raise InputError(f"running it called sys.exit({exc.code!r})", source=source) from None
    if recorder.launches == 0:
        check_language(fn, "triton", source)
        raise InputError("no Triton kernel was launched", source=source)
    if recorder.launches > 1:
        raise InputError(f"{recorder.launches} Triton kernels were launched; capture needs exactly one", source=source)
    launch = recorder.launch
    assert launch is not None
    if not launch.programs:
        raise InputError(f"the kernel was launched with no programs (grid {list(launch.grid)}): nothing to capture; "
                         "give parameters that make work", source=source)
    trace = _build_trace(launch, source, dict(params))
    held = _held_registers(launch)
    if compile_for is None and held > MAX_REGISTERS_PER_THREAD:
        raise InputError(f"the kernel would hold {held} fp32 values per thread (its accumulators or largest tile over "
                         f"{launch.num_warps} warps); a GPU thread has {MAX_REGISTERS_PER_THREAD} registers: use more "
                         "warps or smaller blocks, as the gemm family asks (or --compile-for: the compiler's count, "
                         "with its spills)", source=source)
    if compile_for is not None:
        from accelsim.capture.triton_compile import compile_call

        assert recorder.call is not None
        trace = with_compiled_resources(trace, compile_call(recorder.call, compile_for, source))
    return trace


def with_compiled_resources(trace: KernelTrace, compiled) -> KernelTrace:
    """``trace`` with the compiler's shared memory and registers in place of the capture's
    estimates (kept under ``metadata.estimated_resources``)."""
    doc = trace.model_dump(mode="json")
    resources = doc["kernel"]["resources"]
    doc["metadata"]["estimated_resources"] = dict(resources)
    doc["metadata"]["compiled"] = compiled.as_dict()
    resources["local_memory_bytes"] = compiled.shared_memory_bytes
    resources["registers_per_thread"] = compiled.registers_per_thread
    return KernelTrace.model_validate(doc)


def _input_error_in(exc: BaseException) -> InputError | None:
    """An InputError raised by the capture inside the interpreter arrives wrapped in the
    interpreter's own error."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, InputError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


# ---------------------------------------------------------------- the interpreter


@contextlib.contextmanager
def _interpreter_mode() -> Iterator[None]:
    """``TRITON_INTERPRET=1`` while the user's file is imported (``@triton.jit`` reads it then)."""
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before


def _require_interpreter(source: str) -> None:
    """Triton decorates its own library functions (``tl.cdiv``, ``tl.max``, ...) when it is
    first imported: in interpreter mode only if ``TRITON_INTERPRET=1`` was set by then."""
    import triton.language as tl

    if type(tl.cdiv).__name__ != "InterpretedFunction":
        raise InputError("triton was imported in this process before TRITON_INTERPRET=1 was set; capture runs "
                         "kernels in Triton's interpreter: set TRITON_INTERPRET=1 before importing triton",
                         source=source)


@contextlib.contextmanager
def _hooks(recorder: "_Recorder") -> Iterator[None]:
    """Install the recording hooks on Triton's interpreter; everything is restored after."""
    import torch
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    patches: list[tuple[object, str, object]] = []

    def patch(obj: object, name: str, value: object) -> None:
        patches.append((obj, name, vars(obj).get(name, _ABSENT)))
        setattr(obj, name, value)

    for name, wrapper in _builder_hooks(builder, recorder.memory, recorder.compute).items():
        patch(builder, name, wrapper)
    patch(builder, "options", dataclasses.replace(builder.options, sanitize_overflow=False))
    for cls in (interpreter.ReduceOps, interpreter.ScanOps):
        patch(cls, "apply_impl", recorder.compute.reduction_hook(cls.apply_impl))
    patch(builder, "cast_impl", recorder.compute.cast_hook(_fast_cast(builder.cast_impl)))
    patch(builder, "create_fp_to_fp", recorder.compute.cast_hook(builder.create_fp_to_fp))
    patch(interpreter, "_patch_builtin", _cached_patch_builtin(interpreter))
    patch(interpreter, "_patch_lang_core", recorder.loops.lang_hook(interpreter._patch_lang_core))
    patch(interpreter.GridExecutor, "__call__", recorder.launch_hook(interpreter.GridExecutor.__call__))
    patch(interpreter.InterpretedFunction, "run", recorder.call_hook(interpreter.InterpretedFunction.run))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matmuls; more threads only contend with numpy's
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        for obj, name, before in reversed(patches):
            if before is _ABSENT:
                delattr(obj, name)
            else:
                setattr(obj, name, before)


_ABSENT = object()


# ---------------------------------------------------------------- what one program did


@dataclass
class TensorArg:
    """A tensor argument of the launch: where its elements lie in memory."""

    name: str
    base: int
    end: int
    itemsize: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str

    def coordinates(self, offset: int) -> list[int]:
        """Element offset from ``base`` -> index along each axis."""
        coords = [0] * len(self.shape)
        for axis in sorted(range(len(self.shape)), key=lambda a: -self.strides[a]):
            if self.shape[axis] > 1 and self.strides[axis] > 0:
                coords[axis], offset = divmod(offset, self.strides[axis])
        return coords

    def holds(self, address: int) -> bool:
        """Is ``address`` one of this tensor's elements (not a gap between a view's rows)?"""
        offset, rest = divmod(address - self.base, self.itemsize)
        if rest or not 0 <= address < self.end:
            return False
        coords = self.coordinates(offset)
        return (all(0 <= c < n for c, n in zip(coords, self.shape))
                and sum(c * st for c, st in zip(coords, self.strides)) == offset)

    def axis_with_stride(self, step: int) -> int | None:
        for axis, (size, stride) in enumerate(zip(self.shape, self.strides)):
            if size > 1 and stride == step:
                return axis
        return None


@dataclass
class DotRecord:
    """One dot: its shape, and which of its products are useful."""

    m: int
    n: int
    k: int
    unit: str
    dtype: str
    out: np.ndarray
    products: np.ndarray | None
    """Per output element, the products of two nonzero operands; ``None``: all ``k``."""
    keep: np.ndarray | None = None
    """Output elements no ``tl.where`` discarded; ``None``: all."""
    passes: int = 1
    """Matrix-unit passes per dot: 3 for ``tf32x3`` (fp32 split into a high and a low tf32
    part, three products); its useful flops stay those of one fp32 product."""

    def useful_flops(self) -> float:
        if self.products is None:
            kept = self.m * self.n if self.keep is None else int(np.count_nonzero(self.keep))
            return 2.0 * self.k * kept
        products = self.products if self.keep is None else self.products * self.keep
        return 2.0 * float(products.sum())


@dataclass
class StepRecord:
    """What a program did between two step boundaries."""

    loop: "LoopRecord | None"
    iteration: int
    transfers: list[tuple[str, tuple[int, ...], int, str]] = field(default_factory=list)
    """(tensor, block, bytes, direction)"""
    dots: list[DotRecord] = field(default_factory=list)
    work: dict[tuple[str, str, bool], float] = field(default_factory=dict)
    """(unit, dtype, useful) -> flops of vector and special-function work."""

    @property
    def empty(self) -> bool:
        return not self.transfers and not self.dots and not self.work

    def content(self) -> tuple:
        """Everything but the block coordinates: what must agree for steps to merge."""
        compute = [("matrix" if d.unit == "matrix" else "vector", d.useful_flops(), d.dtype,
                    (d.m, d.n, d.k) if d.unit == "matrix" else None, True, d.passes) for d in self.dots]
        compute += [(unit, flops, dtype, None, useful, 1) for (unit, dtype, useful), flops in sorted(self.work.items())]
        return (tuple((t, b, d) for t, _, b, d in self.transfers), tuple(compute))

    def coords(self) -> tuple[tuple[int, ...], ...]:
        return tuple(block for _, block, _, _ in self.transfers)


@dataclass
class LoopRecord:
    trips: int
    executed: list[int] = field(default_factory=list)
    has_inner: bool = False
    first_step: "StepRecord | None" = None

    @property
    def skipped(self) -> bool:
        return len(self.executed) < self.trips


@dataclass
class ProgramRecord:
    """One program instance's events, grouped into steps, and the resources it implies."""

    pid: int
    compress: bool
    steps: list[StepRecord] = field(default_factory=list)
    loops: list[LoopRecord] = field(default_factory=list)
    stack: list[LoopRecord] = field(default_factory=list)
    current: StepRecord = field(default_factory=lambda: StepRecord(None, 0))
    loaded: dict[int, tuple[np.ndarray, int, int, bool]] = field(default_factory=dict)
    """id(data) -> (data, tile bytes, step index, loaded inside a loop) of each load."""
    feeding: set[int] = field(default_factory=set)
    views: dict[int, tuple[np.ndarray, int]] = field(default_factory=dict)
    """id(data) -> (data, key in ``loaded``) of transposes of loaded tiles (``tl.trans(k)``
    feeding a dot is the tile ``k``, held once however many ways it is used)."""
    uniform: dict[int, np.ndarray] = field(default_factory=dict)
    """id(data) -> data of blocks made by splatting a scalar (constants: converting them
    costs nothing on a GPU, the compiler materialises them)."""
    valid: dict[int, tuple[np.ndarray, np.ndarray | None]] = field(default_factory=dict)
    """id(data) -> (data, mask) of loaded tiles and their transposes and conversions: which
    elements the load masked in (None: all). A dot's products with a masked-off operand
    element are not useful; zeros in the data are."""
    recent_dots: list[DotRecord] = field(default_factory=list)
    largest_tile_elements: int = 0
    largest_reduction_rows: int = 0

    # --- step boundaries
    def close_step(self, loop: LoopRecord | None, iteration: int) -> None:
        self.steps.append(self.current)
        self.current = StepRecord(loop, iteration)

    def enter_loop(self, trips: int) -> LoopRecord:
        loop = LoopRecord(trips)
        for outer in self.stack:
            outer.has_inner = True
        self.loops.append(loop)
        self.stack.append(loop)
        return loop

    def begin_iteration(self, loop: LoopRecord, iteration: int) -> None:
        loop.executed.append(iteration)
        self.close_step(loop, iteration)
        if iteration == 0:
            loop.first_step = self.current

    def exit_loop(self, loop: LoopRecord) -> None:
        self.stack.remove(loop)
        outer = self.stack[-1] if self.stack else None
        self.close_step(outer, outer.executed[-1] if outer else 0)

    def after_dot(self) -> None:
        if not self.stack:
            self.close_step(None, 0)

    # --- data flow
    def same_elements(self, src, out, transform=None) -> None:
        """``out`` holds ``src``'s elements (converted or rearranged by ``transform``)."""
        entry = self.valid.get(id(src.data))
        if entry is not None and entry[0] is src.data:
            mask = entry[1] if entry[1] is None or transform is None else transform(entry[1])
            self.valid[id(out.data)] = (out.data, mask)

    # --- the finished program
    def finish(self) -> "ProgramSummary":
        self.close_step(None, 0)
        steps = _fold_compute_only(self.steps)
        summary = ProgramSummary(
            pid=self.pid,
            steps=[(s.loop, s.iteration, s.content(), s.coords()) for s in steps],
            loops=self.loops,
            local_tile_bytes=self._local_tile_bytes(),
            live_elements=max((sum(d.m * d.n for d in s.dots) for s in steps), default=0),
            dots_per_step=max((len(s.dots) for s in steps), default=0),
            largest_tile_elements=self.largest_tile_elements,
            largest_reduction_rows=self.largest_reduction_rows,
            has_loop=any(s.loop is not None and s.transfers for s in steps),
        )
        self.loaded.clear()
        self.views.clear()
        self.recent_dots.clear()
        self.uniform.clear()
        self.valid.clear()
        for loop in self.loops:
            loop.first_step = None
        return summary

    def _local_tile_bytes(self) -> tuple[int, int]:
        """(held, staged): bytes of dot operand tiles loaded outside loops (held once) and
        the most loaded by one loop iteration (buffered ``num_stages`` times)."""
        held, staged = 0, {}
        for key in self.feeding:
            _, tile_bytes, step, in_loop = self.loaded[key]
            if in_loop:
                staged[step] = staged.get(step, 0) + tile_bytes
            else:
                held += tile_bytes
        return held, max(staged.values(), default=0)


def _fold_compute_only(steps: list[StepRecord]) -> list[StepRecord]:
    """Drop empty steps; vector work outside loops with no transfer or dot of its own
    (scalar set-up between loads) joins the next step."""
    out: list[StepRecord] = []
    pending: dict[tuple[str, str, bool], float] = {}
    for step in steps:
        if step.empty:
            continue
        if step.loop is None and not step.transfers and not step.dots:
            _add_work(pending, step.work)
            continue
        _add_work(step.work, pending)
        pending = {}
        out.append(step)
    if pending and out:
        _add_work(out[-1].work, pending)
    return out


def _add_work(into: dict, work: dict) -> None:
    for key, flops in work.items():
        into[key] = into.get(key, 0.0) + flops


@dataclass
class ProgramSummary:
    """A finished program: its steps (loop, iteration, content, block coordinates) and resources."""

    pid: int
    steps: list[tuple[LoopRecord | None, int, tuple, tuple]]
    loops: list[LoopRecord]
    local_tile_bytes: tuple[int, int]
    live_elements: int
    dots_per_step: int
    largest_tile_elements: int
    largest_reduction_rows: int
    has_loop: bool

    @property
    def complete(self) -> bool:
        """Every loop iteration ran (nothing interpolated)."""
        return not any(loop.skipped for loop in self.loops)


# ---------------------------------------------------------------- the recorder


@dataclass
class Launch:
    """The captured launch: kernel, grid, arguments, options and every program's summary."""

    kernel: str
    grid: tuple[int, ...]
    arguments: list[TensorArg]
    num_warps: int
    num_stages: int
    constants: dict[str, Any]
    programs: dict[int, ProgramSummary] = field(default_factory=dict)
    """The programs that ran."""
    predicted: dict[int, list[Run]] = field(default_factory=dict)
    """The steps of programs replicated from their class (:func:`_replicate`)."""
    traced_in_full: int = 0

    @property
    def num_programs(self) -> int:
        return math.prod(self.grid)


@dataclass
class _Running:
    """What the recorder's parts share during a capture: the program instance running now
    (``None`` between programs and for programs a pass skips) and the feature probe."""

    program: ProgramRecord | None = None
    probe: FeatureProbe | None = None
    """The features of every program, while and after the prologue runs for all at once."""
    probing: Callable | None = None
    """While the probe runs: whether a handle holds one value per program."""


class _Recorder:
    """Receives the interpreter's calls during a capture and keeps the launch's record.

    It runs the launch (its passes over the programs, the feature probe) and gives each
    program a :class:`ProgramRecord`; what a program does goes to its parts, which share
    the running program (:class:`_Running`): loads and stores to :class:`_MemoryEvents`,
    dots and block work to :class:`_ComputeEvents`, loops to :class:`_LoopEvents`."""

    def __init__(self, *, compress: bool) -> None:
        self.compress = compress
        self.launches = 0
        self.launch: Launch | None = None
        self.running = _Running()
        self.memory = _MemoryEvents(self.running)
        self.compute = _ComputeEvents(self.running)
        self.loops = _LoopEvents(self.running)
        self.constants: dict[str, Any] = {}
        self.mode_of: Callable[[int], str | None] = lambda pid: None
        """'compressed', 'full', 'features' or None (skip) for each program of the current pass."""
        self.finished: dict[int, ProgramSummary] = {}
        self.call: KernelCall | None = None
        """The first launch's kernel and arguments, for compiling it (``compile_for``)."""

    def call_hook(self, original: Callable) -> Callable:
        recorder = self

        def run(function, *args, grid, warmup, **kwargs):
            if recorder.call is None and not warmup:
                recorder.call = KernelCall(fn=function.fn, args=args, kwargs=dict(kwargs))
            return original(function, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    def launch_hook(self, original: Callable) -> Callable:
        recorder = self

        def call(executor, *args, **kwargs):
            recorder.launches += 1
            if recorder.launches > 1:
                return None  # counted, not run: capture_triton reports it
            recorder._capture_launch(original, executor, args, kwargs)
            return None

        return call

    def _capture_launch(self, original: Callable, executor, args: tuple, kwargs: dict) -> None:
        """Exact: every program in full. Else the prologue runs once for every program
        (the features), a few programs of each class run (loops compressed) and the rest
        are replicated (:func:`_replicate`); classes that cannot be replicated run whole;
        the verification passes then run chosen programs again in full."""
        from triton.runtime import interpreter

        def run_pass(mode_of: Callable[[int], str | None]) -> dict[int, ProgramSummary]:
            self.mode_of = mode_of
            self.finished = {}
            original(executor, *args, **kwargs)
            return self.finished

        with self._attached(executor) as fn:
            if self.compress:  # the probe's pass also sets the grid
                run_pass(lambda pid: "features" if pid == 0 else None)
                programs = {}
            else:
                programs = run_pass(lambda pid: "full")
            launch = Launch(
                kernel=fn.__name__, grid=_trim_grid(interpreter.interpreter_builder.grid_dim),
                arguments=self.memory.arguments, constants=self.constants,
                num_warps=int(kwargs.get("num_warps") or DEFAULT_NUM_WARPS),
                num_stages=int(kwargs.get("num_stages") or DEFAULT_NUM_STAGES),
                programs=programs,
            )
            if self.compress:
                n = launch.num_programs
                probe = self.running.probe
                features = probe.features() if probe is not None and n > REPRESENTATIVES else None
                classes = _class_members(features, n)
                chosen = {int(pid) for members in classes for pid in (*representatives(members), *held_out(members))}
                launch.programs = run_pass(lambda pid: "compressed" if pid in chosen else None)
                launch.predicted, rest = _replicate(classes, launch.programs, features)
                if rest:
                    launch.programs.update(run_pass(lambda pid: "compressed" if pid in rest else None))
            for chosen in _verification_passes(launch):
                launch.programs.update(run_pass(lambda pid: "full" if pid in chosen else None))
        launch.traced_in_full = sum(p.complete for p in launch.programs.values())
        self.launch = launch

    @contextlib.contextmanager
    def _attached(self, executor) -> Iterator[Callable]:
        """The grid executor calls our per-program stand-in and reports its arguments to
        us; plain ``range`` in the kernel's module is tracked. Yields the kernel function."""
        fn = executor.fn
        init_args = executor._init_args_hst

        def init_and_record(args_dev, kwargs_dev):
            args_hst, kwargs_hst = init_args(args_dev, kwargs_dev)
            self._set_arguments(executor, fn, args_hst, kwargs_hst)
            return args_hst, kwargs_hst

        names = fn.__globals__
        previous_range = names.get("range", _ABSENT)
        executor._init_args_hst = init_and_record
        executor.fn = _per_program(fn, self)
        names["range"] = self.loops.tracked(builtins.range)
        try:
            yield fn
        finally:
            executor.fn = fn
            del executor._init_args_hst
            if previous_range is _ABSENT:
                names.pop("range", None)
            else:
                names["range"] = previous_range

    def _set_arguments(self, executor, fn, args_hst, kwargs_hst) -> None:
        bound = inspect.signature(fn).bind_partial(*args_hst, **{k: v for k, v in kwargs_hst.items()
                                                                 if k in executor.arg_names})
        tensors, constants = [], {}
        for name, value in bound.arguments.items():
            tensor = getattr(value, "base", value)  # TensorWrapper (reinterpreted dtype) or tensor
            if hasattr(tensor, "data_ptr") and hasattr(tensor, "untyped_storage"):
                if tensor.numel():
                    tensors.append(_tensor_arg(name, tensor))
            elif name in executor.constexprs and isinstance(value, (int, float, bool, str)):
                constants[name] = value
        self.memory.set_arguments(tensors)
        self.constants = constants

    def run_program(self, fn: Callable, kwargs: dict) -> None:
        from triton.runtime import interpreter

        builder = interpreter.interpreter_builder
        x, y, z = builder.grid_idx
        nx, ny, _ = builder.grid_dim
        pid = x + nx * (y + ny * z)
        mode = self.mode_of(pid)
        if mode is None:
            return
        if mode == "features":
            self._probe_features(builder, fn, kwargs)
            return
        self.running.program = ProgramRecord(pid, compress=mode == "compressed")
        try:
            fn(**kwargs)
            self.finished[pid] = self.running.program.finish()
        finally:
            self.running.program = None

    def _probe_features(self, builder, fn: Callable, kwargs: dict) -> None:
        """Run the prologue once for every program: ``tl.program_id`` gives every
        program's coordinate, the scalar operations on it run over all programs and their
        integer results are recorded; a block made from such a scalar holds program 0's
        value (so the block work goes on), and the probe ends at the first loop, at an
        operation on per-program values that does not keep one value per program, or at
        anything else it cannot run (a branch on a per-program value)."""
        from triton.runtime.interpreter import TensorHandle

        probe = self.running.probe = FeatureProbe.for_grid(builder.grid_dim)
        programs = probe.programs
        per_program: dict[int, Any] = {}

        def is_per_program(value) -> bool:
            return isinstance(value, TensorHandle) and per_program.get(id(value)) is value

        def keep(handle):
            per_program[id(handle)] = handle
            probe.add(handle.data)
            return handle

        def program_id(axis):
            return keep(TensorHandle(probe.grid_coords[axis].astype(np.int32), _int32()))

        def over_programs(name: str, method: Callable) -> Callable:
            def call(*args, **kwargs):
                if not any(map(is_per_program, args)):
                    return method(*args, **kwargs)
                if name == "create_splat":
                    return method(*(TensorHandle(a.data[:1], a.dtype) if is_per_program(a) else a for a in args))
                out = method(*args, **kwargs)
                if isinstance(out, TensorHandle) and out.data.shape == (programs,):
                    return keep(out)
                raise ProbeDone

            return call

        patched = {}
        for name in dir(type(builder)):
            if name.startswith("create_") and callable(getattr(builder, name)):
                patched[name] = vars(builder).get(name, _ABSENT)
                setattr(builder, name, over_programs(name, getattr(builder, name)))
        patched["create_get_program_id"] = vars(builder).get("create_get_program_id", _ABSENT)
        builder.create_get_program_id = program_id
        self.running.probing = is_per_program
        try:
            fn(**kwargs)
        except Exception:  # noqa: BLE001 - ProbeDone, or an operation that needs one program: features so far
            pass
        finally:
            self.running.probing = None
            for name, before in patched.items():
                if before is _ABSENT:
                    delattr(builder, name)
                else:
                    setattr(builder, name, before)


class _LoopEvents:
    """Loops in the kernel (``tl.range``, ``tl.static_range``, the module's ``range``):
    each iteration opens a step of the running program; a compressed program runs only
    some iterations of an innermost loop (:data:`COMPRESS_ABOVE`); while the feature
    probe runs, a loop ends it."""

    def __init__(self, running: _Running) -> None:
        self.running = running

    def lang_hook(self, original: Callable) -> Callable:
        """Wrap the interpreter's ``tl.range``/``tl.static_range`` each time it patches the language."""
        loops = self

        def patch_lang_core(lang, scope):
            original(lang, scope)
            for name in ("range", "static_range"):
                scope.set_attr(lang, name, loops.tracked(getattr(lang, name)))

        return patch_lang_core

    def tracked(self, make_range: Callable) -> Callable:
        def tracked_range(*args, **kwargs):
            if self.running.probing is not None:
                self._probe_loop(args)
            return self._loop(make_range(*args, **kwargs))

        return tracked_range

    def _probe_loop(self, bounds: tuple) -> None:
        """A loop ends the feature probe: its start and trip count per program are its last
        features."""
        probe = self.running.probe
        programs = probe.programs
        values = []
        for bound in bounds:
            handle = getattr(bound, "handle", None)
            data = handle.data if handle is not None else getattr(bound, "value", bound)
            values.append(np.broadcast_to(np.asarray(data, dtype=np.int64).reshape(-1), (programs,)))
        if len(values) == 1:  # range(stop)
            values.insert(0, np.zeros(programs, dtype=np.int64))
        if len(values) == 2:  # range(start, stop)
            values.append(np.ones(programs, dtype=np.int64))
        start, stop, step = values[:3]
        if (step > 0).all():
            probe.add(start)
            probe.add(np.maximum(-(-(stop - start) // step), 0))
        raise ProbeDone

    def _loop(self, values: range) -> Iterator[int]:
        program = self.running.program
        if program is None:
            yield from values
            return
        trips = len(values)
        loop = program.enter_loop(trips)
        for i in range(trips):
            if i == 1 and program.compress and not loop.has_inner and trips > COMPRESS_ABOVE:
                break
            program.begin_iteration(loop, i)
            yield values[i]
        else:
            program.exit_loop(loop)
            return
        # Compressed: the last iteration, and iteration n-2 too if the last one differs from
        # the first (a masked tail), to see how the body advances.
        program.begin_iteration(loop, trips - 1)
        yield values[trips - 1]
        if loop.first_step.content() != program.current.content():
            program.begin_iteration(loop, trips - 2)
            yield values[trips - 2]
        program.exit_loop(loop)


class _MemoryEvents:
    """Loads and stores of the running program: the tensor argument whose memory each
    touches, its block and its masked-in bytes; loaded tiles (and their transposes), which
    a dot may take as operands, and which of their elements the load masked in."""

    def __init__(self, running: _Running) -> None:
        self.running = running
        self.arguments: list[TensorArg] = []
        self.position: dict[str, int] = {}
        self.by_address: list[TensorArg] = []
        self.bases: np.ndarray = np.zeros(0, dtype=np.uint64)

    def set_arguments(self, tensors: list[TensorArg]) -> None:
        """The launch's tensor arguments, in argument order."""
        self.arguments = tensors  # in argument order: what the trace lists
        self.position = {t.name: i for i, t in enumerate(tensors)}
        self.by_address = sorted(tensors, key=lambda t: (t.base, self.position[t.name]))  # for lookups only
        self.bases = np.array([t.base for t in self.by_address], dtype=np.uint64)

    def _locate(self, ptrs: np.ndarray, mask: np.ndarray, element_bytes: int):
        """(tensor name, block, bytes, tile bytes, tile elements), or None if nothing is masked in."""
        ptrs = np.asarray(ptrs)
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), ptrs.shape)
        count = int(np.count_nonzero(mask))
        if count == 0:
            return None
        active = ptrs if count == ptrs.size else ptrs[mask]
        low, high = int(active.min()), int(active.max())
        arg = self._owner(low, high)
        if arg is None:
            raise InputError(f"a load or store touches address {hex(low)}..{hex(high)}, outside every tensor "
                             "argument of the kernel", source="capture")
        corner = int(ptrs.reshape(-1)[0])
        origin = corner if arg.base <= corner < arg.end else low
        coords = arg.coordinates((origin - arg.base) // arg.itemsize)
        extents = [1] * len(arg.shape)
        for axis, size in enumerate(ptrs.shape):
            if size > 1:
                unit = [0] * ptrs.ndim
                unit[axis] = 1
                step = (int(ptrs[tuple(unit)]) - corner) // arg.itemsize
                tensor_axis = arg.axis_with_stride(step)
                if tensor_axis is not None:
                    extents[tensor_axis] = size
        block = tuple(c // e for c, e in zip(coords, extents))
        return arg.name, block, count * element_bytes, ptrs.size * element_bytes, ptrs.size

    def _owner(self, low: int, high: int) -> "TensorArg | None":
        """The argument whose memory holds addresses ``low`` to ``high``. Arguments may
        share memory (views of one buffer, an output aliasing an input): of those whose
        span holds both, the ones that have both as elements, and of those the smallest
        (the most specific view)."""
        last = int(np.searchsorted(self.bases, np.uint64(low), side="right"))
        spans = [a for a in self.by_address[:last] if high < a.end]
        if len(spans) > 1:  # ties go by argument order: where memory was allocated must not matter
            spans = [a for a in spans if a.holds(low) and a.holds(high)] or spans
            spans.sort(key=lambda a: (a.end - a.base, self.position[a.name]))
        return spans[0] if spans else None

    def transfer(self, ptrs, mask, direction: str, out=None) -> None:
        program = self.running.program
        if program is None:
            return
        element = ptrs.get_element_ty()
        element_bytes = max(1, element.primitive_bitwidth // 8)
        located = self._locate(ptrs.data, True if mask is None else mask.data, element_bytes)
        if located is None:
            return
        tensor, block, nbytes, tile_bytes, elements = located
        program.current.transfers.append((tensor, block, nbytes, direction))
        if direction == "read":
            program.largest_tile_elements = max(program.largest_tile_elements, elements)
            if out is not None:
                program.loaded[id(out.data)] = (out.data, tile_bytes, len(program.steps), bool(program.stack))
                masked_in = None if mask is None else np.broadcast_to(np.asarray(mask.data, dtype=bool), out.data.shape)
                program.valid[id(out.data)] = (out.data, None if masked_in is None or masked_in.all() else masked_in)

    def view(self, arg, out, perm) -> None:
        """``out`` is a transpose of ``arg``: if ``arg`` is a loaded tile (or a view of
        one), a dot that takes ``out`` takes that tile."""
        program = self.running.program
        if program is None:
            return
        program.same_elements(arg, out, lambda mask: np.transpose(mask, perm))
        key = id(arg.data)
        view = program.views.get(key)
        if view is not None and view[0] is arg.data:
            key = view[1]
        elif not (key in program.loaded and program.loaded[key][0] is arg.data):
            return
        program.views[id(out.data)] = (out.data, key)


class _ComputeEvents:
    """Compute of the running program: dots (shape, dtype, useful products), the
    ``tl.where`` that discards some of their outputs, vector and special-function work on
    blocks, float conversions and reductions; blocks splatted from a scalar (constants)."""

    def __init__(self, running: _Running) -> None:
        self.running = running

    def dot(self, a, b, out, precision) -> None:
        program = self.running.program
        if program is None:
            return
        for operand in (a, b):
            key = id(operand.data)
            view = program.views.get(key)
            if view is not None and view[0] is operand.data:
                program.feeding.add(view[1])
            elif key in program.loaded and program.loaded[key][0] is operand.data:
                program.feeding.add(key)
        a_nonzero, b_nonzero = self._useful_elements(a), self._useful_elements(b)
        m, k = a.data.shape[-2], a.data.shape[-1]
        n = b.data.shape[-1]
        batch = math.prod(a.data.shape[:-2])
        products = None
        if not (a_nonzero.all() and b_nonzero.all()):
            products = _matmul(a_nonzero.astype(np.float32), b_nonzero.astype(np.float32))
            products = products.reshape(-1, n)
        unit, dtype = _dot_dtype(str(a.dtype.scalar), str(precision))
        passes = 3 if unit == "matrix" and dtype == "tf32" and "TF32X3" in str(precision).upper() else 1
        record = DotRecord(batch * m, n, k, unit, dtype, out.data, products, passes=passes)
        program.current.dots.append(record)
        program.recent_dots = [record, *program.recent_dots[:3]]
        program.after_dot()

    def _useful_elements(self, operand) -> np.ndarray:
        """Which elements of a dot operand count: a loaded tile's masked-in ones (its data
        zeros count), any other operand's nonzero ones (a ``p`` that a causal mask made 0)."""
        entry = self.running.program.valid.get(id(operand.data))
        if entry is not None and entry[0] is operand.data:
            return np.ones(operand.data.shape, dtype=bool) if entry[1] is None else entry[1]
        return _as_float32(operand) != 0

    def select(self, cond, lhs, rhs) -> None:
        """A ``tl.where`` that replaces some of a dot's outputs by a constant (a causal
        mask's ``-inf``) discards them; one choosing between computed values (an activation
        such as leaky ReLU) discards nothing."""
        program = self.running.program
        if program is None:
            return
        for dot in program.recent_dots:
            for this, other, keep in ((lhs, rhs, True), (rhs, lhs, False)):
                if this.data is dot.out and self.is_uniform(other):
                    chosen = np.broadcast_to(np.asarray(cond.data, dtype=bool), dot.out.shape).reshape(dot.m, dot.n)
                    chosen = chosen if keep else ~chosen
                    dot.keep = chosen if dot.keep is None else dot.keep & chosen

    def uniform(self, handle):
        if self.running.program is not None:
            self.running.program.uniform[id(handle.data)] = handle.data
        return handle

    def is_uniform(self, handle) -> bool:
        if handle.data.size <= 1:
            return True
        return self.running.program is not None and self.running.program.uniform.get(id(handle.data)) is handle.data

    def count(self, unit: str, handle, per_element: int = 1, *, useful: bool = True) -> None:
        """Work on a block (a scalar runs on the scalar unit: not counted)."""
        size = handle.data.size
        if self.running.program is None or size <= 1:
            return
        dtype = "fp32" if unit == "special" else _trace_dtype(handle)
        work = self.running.program.current.work
        key = (unit, dtype, useful)
        work[key] = work.get(key, 0.0) + per_element * size

    def counting(self, method: Callable, kind: str, per_element: int, *, on_input: bool) -> Callable:
        def counted(*args):
            out = method(*args)
            if _is_float(args[0] if on_input else out):
                self.count(kind, args[0] if on_input else out, per_element)
            return out

        return counted

    def cast_hook(self, original: Callable) -> Callable:
        """Conversions between floating-point types: time on the vector unit, not flops."""
        compute = self

        def cast(src, dst_type, *rest):
            out = original(src, dst_type, *rest)
            if compute.is_uniform(src):
                return compute.uniform(out)
            if compute.running.program is not None:
                compute.running.program.same_elements(src, out)
            if _is_float(src) and _is_float(out):
                compute.count("vector", out, useful=False)
            return out

        return cast

    def reduction_hook(self, original: Callable) -> Callable:
        """Reductions and scans: one vector flop per input element; rows of the largest
        reduction output size the cross-warp scratch."""
        compute = self

        def apply_impl(reduction, inputs):
            first = inputs[0]
            data = first.handle.data
            program = compute.running.program
            if program is not None and first.dtype.is_floating():
                compute.count("vector", first.handle)
                axis = reduction.axis
                rows = 1 if axis is None or data.ndim == 0 else data.size // data.shape[axis]
                program.largest_reduction_rows = max(program.largest_reduction_rows, rows)
            return original(reduction, inputs)

        return apply_impl


def _builder_hooks(builder, memory: _MemoryEvents, compute: _ComputeEvents) -> dict[str, Callable]:
    """Wrappers for the builder methods the capture listens to, by name: loads, stores,
    atomics and transposes report to ``memory``, dots and block arithmetic to ``compute``."""
    hooks: dict[str, Callable] = {}
    original = {name: getattr(builder, name) for name in
                ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas",
                 "create_dot", "create_select", "create_splat", "create_broadcast", "create_trans")}

    def load(ptrs, mask, other, cache_policy, is_volatile):
        out = original["create_masked_load"](ptrs, mask, other, cache_policy, is_volatile)
        memory.transfer(ptrs, mask, "read", out)
        return out

    def store(ptrs, value, mask, cache_policy):
        memory.transfer(ptrs, mask, "write")
        return original["create_masked_store"](ptrs, value, mask, cache_policy)

    def atomic_rmw(op, ptr, val, mask, sem, scope):
        memory.transfer(ptr, mask, "write")
        return original["create_atomic_rmw"](op, ptr, val, mask, sem, scope)

    def atomic_cas(ptr, cmp, val, sem, scope):
        memory.transfer(ptr, None, "write")
        return original["create_atomic_cas"](ptr, cmp, val, sem, scope)

    def dot(a, b, d, input_precision, max_num_imprecise_acc):
        out = _fast_dot(a, b, d)
        if out is None:
            out = original["create_dot"](a, b, d, input_precision, max_num_imprecise_acc)
        compute.dot(a, b, out, input_precision)
        return out

    def trans(arg, perm):
        out = original["create_trans"](arg, perm)
        memory.view(arg, out, perm)
        return out

    def select(cond, lhs, rhs):
        out = original["create_select"](cond, lhs, rhs)
        if _is_float(out):
            compute.count("vector", out, useful=False)  # masking, not arithmetic
            compute.select(cond, lhs, rhs)
        return out

    def splat(ret_ty, arg):
        return compute.uniform(original["create_splat"](ret_ty, arg))

    def broadcast(arg, shape):
        out = original["create_broadcast"](arg, shape)
        return compute.uniform(out) if compute.is_uniform(arg) else out

    hooks.update(create_splat=splat, create_broadcast=broadcast, create_masked_load=load, create_masked_store=store,
                 create_atomic_rmw=atomic_rmw, create_atomic_cas=atomic_cas, create_dot=dot, create_select=select,
                 create_trans=trans)
    for name, per_element in VECTOR_OPS.items():
        if hasattr(builder, name):
            hooks[name] = compute.counting(getattr(builder, name), "vector", per_element, on_input=False)
    for name in COMPARE_OPS:
        if hasattr(builder, name):
            hooks[name] = compute.counting(getattr(builder, name), "vector", 1, on_input=True)
    for name in SPECIAL_OPS:
        if hasattr(builder, name):
            hooks[name] = compute.counting(getattr(builder, name), "special", 1, on_input=False)
    return hooks


def _per_program(fn: Callable, recorder: "_Recorder") -> Callable:
    """A stand-in for the interpreted kernel that the grid executor calls once per
    program: same signature and globals (the interpreter reads both), and it records."""

    def program(**kwargs):
        recorder.run_program(fn, kwargs)

    wrapper = types.FunctionType(program.__code__, fn.__globals__, fn.__name__, None, program.__closure__)
    wrapper.__signature__ = inspect.signature(fn)
    return wrapper


def _int32():
    import triton.language as tl

    return tl.int32


def _tensor_arg(name: str, tensor) -> TensorArg:
    itemsize = tensor.element_size()
    span = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()) if size > 0) + 1
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in TRACE_DTYPES:
        raise InputError(f"kernel argument {shown(name)} has dtype {dtype}, which traces cannot describe",
                         source="capture")
    return TensorArg(name=name, base=int(tensor.data_ptr()), end=int(tensor.data_ptr()) + span * itemsize,
                     itemsize=itemsize, shape=tuple(tensor.shape) or (1,), strides=tuple(tensor.stride()) or (1,),
                     dtype=TRACE_DTYPES[dtype])


def _trim_grid(grid: tuple[int, int, int]) -> tuple[int, ...]:
    out = list(grid)
    while len(out) > 1 and out[-1] == 1:
        out.pop()
    return tuple(out)


def _trace_dtype(handle) -> str:
    name = str(getattr(handle.dtype, "scalar", handle.dtype))
    if name.startswith("fp8"):
        return "fp8"
    return name if name in ("fp64", "fp32", "fp16", "bf16") else "fp32"


def _is_float(handle) -> bool:
    dtype = handle.dtype
    dtype = getattr(dtype, "scalar", dtype)
    return bool(getattr(dtype, "is_floating", lambda: False)())


def _as_float32(handle) -> np.ndarray:
    data = handle.data
    name = str(handle.dtype.scalar)
    if name == "bf16":
        return (data.astype(np.uint32) << 16).view(np.float32)
    if name.startswith("fp8"):
        import triton.language as tl
        from triton.runtime.interpreter import _convert_float

        return _convert_float(data, handle.dtype.scalar, tl.float16, None).view(np.float16).astype(np.float32)
    return data.astype(np.float32, copy=False)


def _cached_patch_builtin(interpreter) -> Callable:
    """The interpreter's ``_patch_builtin`` lists a module's members on every call of a jit
    function (``tl.cdiv`` too), about 2 ms each, and patches those still unpatched: all of
    them at a launch, none in a call from inside a kernel. Same effect, with the list of
    builtin names kept."""
    import triton.language as tl

    names: dict[int, list[str]] = {}

    def patch_builtin(pkg, builder, scope):
        if id(pkg) not in names:
            names[id(pkg)] = [name for name, member in inspect.getmembers(pkg) if tl.core.is_builtin(member)]
        listed = names[id(pkg)]
        if listed and not tl.core.is_builtin(getattr(pkg, listed[0])):
            return  # patched by the launch already
        for name in listed:
            member = getattr(pkg, name)
            if tl.core.is_builtin(member):
                interpreter._patch_attr(pkg, name, member, builder, scope)

    return patch_builtin


def _fast_cast(original: Callable) -> Callable:
    """bf16 <-> fp32 casts as bit shifts: the interpreter's generic bit-field conversion
    costs about a millisecond per tile (masked loads' ``other`` and every ``.to()``);
    the result is the same (fp32 -> bf16 truncates in the interpreter too)."""
    from triton.runtime.interpreter import TensorHandle

    def cast(src, dst_type):
        source, target = str(src.dtype.scalar), str(dst_type.scalar)
        if source == "fp32" and target == "bf16":
            bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32)
            return TensorHandle((bits >> 16).astype(np.uint16).reshape(src.data.shape), dst_type.scalar)
        if source == "bf16" and target == "fp32":
            return TensorHandle((src.data.astype(np.uint32) << 16).view(np.float32), dst_type.scalar)
        return original(src, dst_type)

    return cast


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import torch

    return torch.matmul(torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(np.ascontiguousarray(b))).numpy()


def _fast_dot(a, b, d):
    """The interpreter's dot, in fp32 through torch: its own runs numpy's non-BLAS loop for
    16-bit inputs and multiplies bf16 bit patterns as integers. ``None``: leave it to the
    interpreter (integer and fp64 dots)."""
    from triton.runtime.interpreter import TensorHandle

    names = {str(a.dtype.scalar), str(b.dtype.scalar)}
    if not names <= {"bf16", "fp16", "fp32"} and not all(n.startswith("fp8") for n in names):
        return None
    if d.data.dtype not in (np.float32, np.float16):
        return None
    out = _matmul(_as_float32(a), _as_float32(b)) + d.data.astype(np.float32)
    return TensorHandle(out.astype(d.data.dtype, copy=False), d.dtype.scalar)


def _dot_dtype(input_dtype: str, precision: str) -> tuple[str, str]:
    """(unit, trace dtype) of a dot: fp32 inputs reach the tensor cores as tf32 unless the
    kernel asks for IEEE precision (then the CUDA cores run it, as the gemm family's fp32)."""
    if input_dtype == "fp32":
        return ("vector", "fp32") if "IEEE" in precision.upper() else ("matrix", "tf32")
    if input_dtype.startswith("fp8"):
        return "matrix", "fp8"
    if input_dtype in ("bf16", "fp16", "int8"):
        return "matrix", input_dtype
    return "vector", "fp64" if input_dtype == "fp64" else "fp32"


# ---------------------------------------------------------------- runs and sampling


@dataclass(frozen=True)
class Run:
    """``count`` consecutive steps with the same content whose block coordinates start at
    ``first`` and advance by ``delta`` (0 or 1 per axis) each step; ``delta`` is None
    for a single step."""

    content: tuple
    first: tuple[tuple[int, ...], ...]
    delta: tuple[tuple[int, ...], ...] | None
    count: int


def _difference(later: tuple, earlier: tuple, times: int) -> tuple | None:
    """Per-step advance from ``earlier`` to ``later`` over ``times`` steps, if it is 0 or 1
    on every axis."""
    out = []
    for block_later, block_earlier in zip(later, earlier):
        axes = []
        for after, before in zip(block_later, block_earlier):
            step, rest = divmod(after - before, times)
            if rest or step not in (0, 1):
                return None
            axes.append(step)
        out.append(tuple(axes))
    return tuple(out)


def _advance(coords: tuple, delta: tuple, times: int) -> tuple:
    return tuple(tuple(c + times * d for c, d in zip(block, step)) for block, step in zip(coords, delta))


def _append(runs: list[Run], run: Run) -> None:
    """Append ``run`` as if its steps were appended one at a time, each joining the last run
    when it continues it (so the result depends only on the sequence of steps)."""
    if runs:
        last = runs[-1]
        if last.content == run.content:
            if last.count == 1:
                delta = _difference(run.first, last.first, 1)
            else:
                delta = last.delta if run.first == _advance(last.first, last.delta, last.count) else None
            if delta is not None:
                if run.count == 1 or run.delta == delta:
                    runs[-1] = Run(last.content, last.first, delta, last.count + run.count)
                    return
                runs[-1] = Run(last.content, last.first, delta, last.count + 1)
                rest = run.count - 1
                runs.append(Run(run.content, _advance(run.first, run.delta, 1), run.delta if rest > 1 else None, rest))
                return
    runs.append(run)


def _program_runs(summary: ProgramSummary) -> list[Run] | None:
    """The program's steps as runs, compressed loops interpolated; ``None`` if a compressed
    loop is not regular (its executed iterations do not advance by 0 or 1 per step)."""
    runs: list[Run] = []
    steps = summary.steps
    i = 0
    while i < len(steps):
        loop, _, content, coords = steps[i]
        if loop is None or not loop.skipped:
            _append(runs, Run(content, coords, None, 1))
            i += 1
            continue
        end = i
        while end < len(steps) and steps[end][0] is loop:
            end += 1
        group, i = steps[i:end], end
        by_iteration = {iteration: (c, xy) for _, iteration, c, xy in group}
        first, middle, last = (by_iteration.get(k) for k in (0, loop.trips - 2, loop.trips - 1))
        body_end = middle or last  # the last iteration like the first (body), else n-2
        if first is None or last is None or body_end[0] != first[0]:
            return None
        body = loop.trips - 1 if middle is None else loop.trips - 2
        delta = _difference(body_end[1], first[1], body)
        if delta is None:
            return None
        _append(runs, Run(first[0], first[1], delta, body + 1))
        if middle is not None:
            _append(runs, Run(last[0], last[1], None, 1))
    return runs


def _class_members(features: np.ndarray | None, programs: int) -> list[np.ndarray]:
    """The programs of each class (:func:`~accelsim.capture.triton_classes.program_classes`),
    ascending; without features, every program is a class of its own."""
    if features is None:
        return [np.array([pid]) for pid in range(programs)]
    classes = program_classes(features)
    order = np.argsort(classes, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(classes[order])) + 1)


def _run_integers(runs: list[Run]) -> list[int]:
    """A program's runs' repeat counts and block coordinates, in order."""
    return [value for run in runs for value in (run.count, *(c for block in run.first for c in block))]


def _with_integers(runs: list[Run], deltas: list[tuple | None], integers: np.ndarray) -> list[Run] | None:
    """``runs`` with the repeat counts and block coordinates :func:`_run_integers` lists and
    the loop advances ``deltas`` (a run of one step has none), as a capture would put them
    (:func:`_append`); None if that would merge or split runs."""
    out: list[Run] = []
    at = 0
    for run, delta in zip(runs, deltas):
        count, at = int(integers[at]), at + 1
        first = []
        for block in run.first:
            first.append(tuple(int(c) for c in integers[at:at + len(block)]))
            at += len(block)
        if count > 1 and delta is None:
            return None  # a loop the representatives ran once each: its advance is unknown
        _append(out, Run(run.content, tuple(first), delta if count > 1 else None, count))
    return out if len(out) == len(runs) else None


def _common_steps(runs: list[list[Run] | None]) -> list[tuple | None] | None:
    """Each run's loop advance, if the representatives' runs have the same content and
    block ranks and agree on the advance of every run some of them loop in; else None."""
    if any(r is None for r in runs) or len({tuple((run.content, len(run.first)) for run in r) for r in runs}) > 1:
        return None
    deltas = []
    for position in range(len(runs[0])):
        seen = {r[position].delta for r in runs if r[position].count > 1}
        if len(seen) > 1:
            return None
        deltas.append(seen.pop() if seen else None)
    return deltas


def _replicate(classes: list[np.ndarray], ran: dict[int, ProgramSummary],
               features: np.ndarray | None) -> tuple[dict[int, list[Run]], set[int]]:
    """(the steps of every program replicated from its class's representatives, the
    programs of classes that cannot be replicated). A class replicates when its
    representatives ran the same steps (content, and loop advances where they loop), each
    of their repeat counts and block coordinates is one integer function of one feature
    for all of them (a :class:`~accelsim.capture.triton_classes.Rule`), and
    its held-out program ran the steps that predicts."""
    predicted: dict[int, list[Run]] = {}
    rest: set[int] = set()
    for members in classes:
        chosen, check = representatives(members), held_out(members)
        if len(check) == 0:
            continue  # the class ran whole
        others = np.setdiff1d(members, np.concatenate([chosen, check]))
        replicas = _class_replicas(members, chosen, [*check.tolist(), *others.tolist()], ran, features)
        if replicas is None or replicas[int(check[0])] != _program_runs(ran[int(check[0])]):
            rest.update(int(pid) for pid in others)
        else:
            del replicas[int(check[0])]
            predicted.update(replicas)
    return predicted, rest


def _class_replicas(members: np.ndarray, chosen: np.ndarray, targets: list[int], ran: dict[int, ProgramSummary],
                    features: np.ndarray) -> dict[int, list[Run]] | None:
    """The predicted steps of each of ``targets`` from the representatives ``chosen`` of
    the class ``members``; None where :func:`_replicate`'s conditions do not hold."""
    runs = [_program_runs(ran[int(pid)]) for pid in chosen]
    deltas = _common_steps(runs)
    if deltas is None:
        return None
    fit = integer_fit(np.array([_run_integers(r) for r in runs], dtype=np.int64), features[:, chosen],
                      features[:, members])
    if fit is None:
        return None
    replicas = {pid: _with_integers(runs[0], deltas, integers)
                for pid, integers in zip(targets, evaluate_fit(fit, features[:, targets]))}
    return None if any(r is None for r in replicas.values()) else replicas


def _verification_passes(launch: Launch) -> Iterator[set[int]]:
    """Which programs to run again in full: first the first and last program of each
    group with the same steps (to check the interpolation of their loops); then every
    program of a group where that check failed (replicated ones too, which then run),
    and every irregular program. Updates ``launch.programs`` between passes (the caller
    runs each pass)."""
    groups: dict[tuple, list[int]] = {}
    irregular = []
    for pid in sorted(launch.programs):
        summary = launch.programs[pid]
        if summary.complete:
            continue
        runs = _program_runs(summary)
        if runs is None:
            irregular.append(pid)
        else:
            groups.setdefault(tuple(r.content for r in runs), []).append(pid)
    samples = {pid: (key, members) for key, members in groups.items() for pid in {members[0], members[-1]}}
    expected = {pid: _program_runs(launch.programs[pid]) for pid in samples}
    if samples:
        yield set(samples)
    failed = {samples[pid][0] for pid in samples if _program_runs(launch.programs[pid]) != expected[pid]}
    rerun = set(irregular)
    for key in failed:
        rerun.update(p for p in groups[key] if not launch.programs[p].complete)
    replicated_again = [pid for pid, runs in launch.predicted.items() if tuple(r.content for r in runs) in failed]
    for pid in replicated_again:
        del launch.predicted[pid]
    rerun.update(replicated_again)
    if rerun:
        yield rerun


# ---------------------------------------------------------------- the trace


class _Variables:
    """``program_vars`` being built: each a name and one integer per program; templates
    reuse a variable (or a grid coordinate) that already holds the values they need."""

    def __init__(self, grid_coords: dict[str, np.ndarray], n: int) -> None:
        self.grid = grid_coords
        self.n = n
        self.values: dict[str, np.ndarray] = {}
        self.assigned: dict[str, np.ndarray] = {}

    def name_for(self, members: np.ndarray, values: np.ndarray, preferred: str) -> str:
        for name, coords in self.grid.items():
            if np.array_equal(coords[members], values):
                return name
        for name, array in self.values.items():
            if self.assigned[name][members].all() and np.array_equal(array[members], values):
                return name
        name, suffix = preferred, 1
        while name in self.values and self.assigned[name][members].any():
            suffix += 1
            name = f"{preferred}_{suffix}"
        if name not in self.values:
            self.values[name] = np.zeros(self.n, dtype=np.int64)
            self.assigned[name] = np.zeros(self.n, dtype=bool)
        self.values[name][members] = values
        self.assigned[name][members] = True
        return name

    def as_dict(self) -> dict[str, list[int]]:
        return {name: array.tolist() for name, array in self.values.items()}


def _templates(runs_of: dict[int, list[Run]]) -> list[tuple[list[int], list[list[Run]]]]:
    """Programs grouped by step content; a group splits further only where two members
    loop with different block advances at the same step."""
    by_content: dict[tuple, list[int]] = {}
    for pid, runs in runs_of.items():
        by_content.setdefault(tuple(r.content for r in runs), []).append(pid)
    out = []
    for members in by_content.values():
        deltas = [{runs_of[p][i].delta for p in members} - {None} for i in range(len(runs_of[members[0]]))]
        if all(len(d) <= 1 for d in deltas):
            out.append((members, [runs_of[p] for p in members]))
            continue
        by_delta: dict[tuple, list[int]] = {}
        for pid in members:
            by_delta.setdefault(tuple(r.delta for r in runs_of[pid]), []).append(pid)
        out.extend((group, [runs_of[p] for p in group]) for group in by_delta.values())
    out.sort(key=lambda item: min(item[0]))
    return out


def _template_steps(index: int, members: np.ndarray, runs: list[list[Run]], variables: _Variables,
                    short_names: dict[str, str]) -> list[dict]:
    steps = []
    for position, sample in enumerate(runs[0]):
        counts = np.array([r[position].count for r in runs])
        deltas = {r[position].delta for r in runs} - {None}
        delta = deltas.pop() if deltas else None
        loops = delta is not None and any(any(block) for block in delta)
        step: dict[str, Any] = {}
        if counts.min() == counts.max():
            step["repeat"] = int(counts[0])
        else:
            step["repeat"] = variables.name_for(members, counts, f"n{index}_{position}")
        if loops:
            step["loop_var"] = LOOP_VAR
        transfers, compute = sample.content
        step["transfers"] = []
        for x, (tensor, nbytes, direction) in enumerate(transfers):
            block = []
            for axis in range(len(sample.first[x])):
                values = np.array([r[position].first[x][axis] for r in runs])
                advances = bool(loops and delta[x][axis])
                block.append(_block_index(values, advances, members, variables, f"{short_names[tensor]}_{axis}"))
            step["transfers"].append({"tensor": short_names[tensor], "block": block, "bytes": int(nbytes),
                                      "direction": direction})
        step["compute"] = [_compute(*work) for work in compute]
        steps.append(step)
    return steps


def _block_index(values: np.ndarray, advances: bool, members: np.ndarray, variables: _Variables,
                 preferred: str) -> int | str:
    if values.min() == values.max() and values[0] >= 0:
        start = int(values[0])
        if not advances:
            return start
        return LOOP_VAR if start == 0 else f"{start}+{LOOP_VAR}"
    name = variables.name_for(members, values, preferred)
    return f"{name}+{LOOP_VAR}" if advances else name


def _compute(unit: str, flops: float, dtype: str, shape: tuple | None, useful: bool, passes: int) -> dict:
    out: dict[str, Any] = {"unit": unit, "flops": float(flops), "dtype": dtype}
    if shape is not None:
        out["shape"] = list(shape)
        if passes > 1:
            out["count"] = passes
    if not useful:
        out["useful"] = False
    return out


def _short_names(arguments: list[TensorArg]) -> dict[str, str]:
    """Kernel argument names without a ``_ptr`` suffix, where that stays unique."""
    names = [a.name for a in arguments]
    out = {}
    for name in names:
        short = name.removesuffix("_ptr")
        out[name] = short if short and short.isidentifier() and (short == name or short not in names) else name
    return out


def _resources(launch: Launch) -> tuple[dict, int]:
    """What one program holds, estimated as the families do, and the pipeline depth.

    Local memory: with dots, the operand tiles they load (tiles loaded in a loop
    iteration ``num_stages`` times, tiles loaded before the loop once: gemm's staged A and
    B, attention's Q plus staged K and V); without, the cross-warp reduction scratch
    (``num_warps`` x rows x 4 bytes, as the row-wise families). Registers: the fp32
    values a thread holds (dot accumulators of the busiest step, else the largest loaded
    tile) plus addressing overhead. Pipeline depth: ``num_stages`` if the kernel loops
    over loads, else 1 (nothing to overlap)."""
    summaries = launch.programs.values()
    threads = launch.num_warps * WARP_SIZE
    has_dots = any(s.dots_per_step for s in summaries)
    if has_dots:
        local = max(held + launch.num_stages * staged for held, staged in (s.local_tile_bytes for s in summaries))
        live = max(s.live_elements for s in summaries)
    else:
        local = launch.num_warps * max(s.largest_reduction_rows for s in summaries) * FP32_BYTES
        live = max(s.largest_tile_elements for s in summaries)
    dots = max(s.dots_per_step for s in summaries)
    registers = min(MAX_REGISTERS_PER_THREAD, math.ceil(live / threads) + REGISTERS_OVERHEAD + REGISTERS_PER_DOT * dots)
    depth = launch.num_stages if any(s.has_loop for s in summaries) else 1
    return {"local_memory_bytes": int(local), "warps": launch.num_warps, "registers_per_thread": registers}, depth


def _held_registers(launch: Launch) -> int:
    """The fp32 values a thread holds (:func:`_resources`' live count, before overheads)."""
    summaries = launch.programs.values()
    has_dots = any(s.dots_per_step for s in summaries)
    live = max(s.live_elements if has_dots else s.largest_tile_elements for s in summaries)
    return math.ceil(live / (launch.num_warps * WARP_SIZE))


def _build_trace(launch: Launch, source: str, params: dict[str, str]) -> KernelTrace:
    runs_of = dict(launch.predicted)
    for pid, summary in launch.programs.items():
        runs = _program_runs(summary)
        assert runs is not None, "irregular programs are run again in full"
        runs_of[pid] = runs
    runs_of = dict(sorted(runs_of.items()))
    n = launch.num_programs
    if len(runs_of) != n:
        raise InputError(f"{n - len(runs_of)} of {n} programs did not finish", source=source)
    pid = np.arange(n)
    grid_coords, stride = {}, 1
    for axis, size in enumerate(launch.grid):
        grid_coords[f"p{axis}"] = (pid // stride) % size
        stride *= size
    variables = _Variables(grid_coords, n)
    names = _short_names(launch.arguments)
    template_of = np.zeros(n, dtype=np.int64)
    templates = []
    for index, (members, runs) in enumerate(_templates(runs_of)):
        members_array = np.array(members)
        template_of[members_array] = index
        templates.append({"name": f"t{index}", "steps": _template_steps(index, members_array, runs, variables, names)})
    used = {x["tensor"] for t in templates for s in t["steps"] for x in s["transfers"]}
    resources, depth = _resources(launch)
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": launch.kernel, "grid": list(launch.grid), "resources": resources, "pipeline_depth": depth},
        "tensors": {names[a.name]: {"shape": list(a.shape), "dtype": a.dtype}
                    for a in launch.arguments if names[a.name] in used},
        "templates": templates,
        "program_template": template_of.tolist() if len(templates) > 1 else None,
        "program_vars": variables.as_dict(),
        "metadata": {
            "capture": "accelsim.capture.triton",
            "source": source,
            "params": params,
            "config": {"num_warps": launch.num_warps, "num_stages": launch.num_stages, **launch.constants},
            "sampling": {"programs": n, "traced_in_full": launch.traced_in_full,
                         "loops_interpolated": len(launch.programs) - launch.traced_in_full,
                         "replicated": len(launch.predicted)},
        },
    })
