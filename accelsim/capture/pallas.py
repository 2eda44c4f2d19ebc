"""Kernel traces from real Pallas kernels, on a CPU, without running them.

``jax.make_jaxpr`` of the user's function exposes the ``pallas_call`` (nested under
``pjit`` and friends). From it we read:

- the grid, each operand's block shape, array shape and dtype, and its index map,
  which we evaluate (vmapped) over every grid point;
- dimension semantics (megacore split of ``parallel`` axes) and buffer counts
  (``pipeline_mode=pl.Buffered(n)``; default 2);
- scratch shapes, which with the double-buffered blocks give the VMEM a program holds;
- the kernel body's work per grid point: ``dot_general`` from its dimension numbers
  (a matrix-unit operation of shape [m, n, k]), elementwise and reduction ops as vector
  flops, transcendentals as special-function evaluations, ``scan`` bodies times their
  length, counted ``while`` loops (``fori_loop`` with bounds computed from ``program_id``,
  ``num_programs`` and literals, as a causal kernel's) their body times the trip count
  at each grid point. A ``cond`` (``pl.when``) whose predicate is computed from ``program_id``,
  ``num_programs`` and literals is evaluated at every grid point and only the taken
  branch counts there; **any other ``cond`` counts all its branches** (an upper bound).
  Matmuls count the block as executed (ragged edge blocks are padded, as on the TPU).

Then the TPU pipeline rule (:mod:`accelsim.families.pallas_rule`, shared with the
built-in families) decides which blocks are copied at which grid step. Edge blocks
move only their in-bounds part. Scalar prefetch and manual DMAs
(``pltpu.make_async_copy``) are recognised and refused with a clear message.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.arrays import unique_rows
from accelsim.capture.common import check_language, load_function, typed_params
from accelsim.errors import InputError, shown
from accelsim.families.pallas_rule import Operand, pallas_trace
from accelsim.trace.kernel import Compute, KernelTrace, check_programs

TRANSCENDENTAL = {
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "rsqrt", "sqrt",
    "cbrt", "erf", "erfc", "erf_inv", "pow", "atan2", "asin", "acos", "atan", "sinh", "cosh",
}
ELEMENTWISE = {
    "add", "sub", "mul", "div", "max", "min", "neg", "abs", "sign", "floor", "ceil", "round", "select_n",
    "integer_pow", "square", "clamp", "rem", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
    "convert_element_type", "add_any", "reciprocal",
}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
VALUE_PRESERVING = {"convert_element_type", "select_n", "jit", "pjit", "closed_call"}
"""Ops whose output holds one input block's elements (converted, or some masked to a constant)."""
NOT_FLOPS = {"convert_element_type", "select_n"}
"""Elementwise work that moves or picks values rather than computing them (``useful: false``)."""
REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "cumsum", "cummax"}
MANUAL_DMA = {"dma_start", "dma_wait", "async_copy", "semaphore_signal", "semaphore_wait"}
DTYPE_NAMES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16", "float64": "fp64", "int8": "int8",
               "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int32": "fp32"}


def capture_pallas(path: str, function: str, params: Mapping[str, str], *, launch: int | None = None) -> KernelTrace:
    """Trace ``path:function(**params)`` and return the kernel trace of its pallas_call."""
    import jax

    fn = load_function(path, function)
    kwargs = typed_params(params)
    try:
        closed = jax.make_jaxpr(lambda: fn(**kwargs))()
    except InputError:
        raise
    except Exception as exc:  # the user's function failed while tracing
        check_language(fn, "pallas", path)
        hint = (f"; {function}() is traced, not run: it cannot turn results into numbers or check them "
                "(do that outside the function capture traces)"
                if type(exc).__name__ in ("TracerArrayConversionError", "ConcretizationTypeError",
                                          "TracerBoolConversionError", "TracerIntegerConversionError") else "")
        raise InputError(f"tracing {function}() failed: {type(exc).__name__}: {exc}{hint}", source=path) from None
    except SystemExit as exc:
        raise InputError(f"tracing {function}() called sys.exit({exc.code!r})", source=path) from None
    calls = list(find_pallas_calls(closed.jaxpr))
    if not calls:
        check_language(fn, "pallas", path)
        raise InputError(f"{function}() launched no pallas_call", source=path)
    if launch is None and len(calls) > 1:
        raise InputError(f"{function}() launched {len(calls)} pallas_calls; choose one with --launch N", source=path)
    index = launch or 0
    if not 0 <= index < len(calls):
        raise InputError(f"--launch {index}: there are {len(calls)} pallas_calls", source=path)
    metadata = {"name": f"{Path(path).stem}.{function}", "captured_from": f"{path}:{function}", "params": kwargs,
                "tool": "accelsim.capture.pallas"}
    return trace_from_pallas_call(calls[index], metadata, source=path, closed=closed)


def find_pallas_calls(jaxpr) -> Iterator[Any]:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            yield eqn
            continue
        for sub in _sub_jaxprs(eqn):
            yield from find_pallas_calls(sub)


def _sub_jaxprs(eqn) -> Iterator[Any]:
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", None)
            if inner is not None and hasattr(inner, "eqns"):
                yield inner
            elif hasattr(item, "eqns"):
                yield item


def trace_from_pallas_call(eqn, metadata: dict[str, Any], *, source: str = "pallas_call", closed=None) -> KernelTrace:
    """``closed``: the jaxpr ``eqn`` sits in, to compute the values of scalar-prefetched
    operands and dynamic grid sizes from (:mod:`accelsim.capture.pallas_scalar`)."""
    gm = eqn.params["grid_mapping"]
    body = eqn.params["jaxpr"]
    scalars = gm.num_dynamic_grid_bounds + gm.num_index_operands
    if scalars or MANUAL_DMA & _primitives(body):
        if closed is None:
            raise InputError("a kernel with scalar prefetch or manual DMAs is captured from its program "
                             "(capture_pallas)", source=source)
        from accelsim.capture.pallas_scalar import operand_values

        values = operand_values(closed, eqn, scalars)
        return _runtime_trace(eqn, metadata, source, values)
    grid = tuple(int(g) for g in gm.grid)
    _check_grid(grid, source)
    points, n = _grid_points(grid)
    operands, tensors, buffers_bytes, depth, extents = _block_operands(
        eqn, points, n, source, lambda index_fn: _vmapped_indices(index_fn, points, n, grid))
    counter = WorkCounter(points, grid)
    counter.ref_extents = {var: axes for var, axes in zip(body.invars, extents)}
    counter.count(body, np.ones(n))
    compute_lists, which = counter.per_program()
    return _trace(eqn, metadata, grid, operands, compute_lists, which, tensors, buffers_bytes + _scratch_bytes(gm),
                  depth)


def _runtime_trace(eqn, metadata: dict[str, Any], source: str, values: list[np.ndarray]) -> KernelTrace:
    """A kernel whose indices or work depend on run-time scalars: its index maps and body
    run per grid point (:class:`~accelsim.capture.pallas_scalar.KernelRun`)."""
    from accelsim.capture.pallas_scalar import KernelRun, MemoryRef, ScalarRef, memory_space

    gm = eqn.params["grid_mapping"]
    bounds = iter(values[:gm.num_dynamic_grid_bounds])
    grid = tuple(int(np.asarray(next(bounds))) if type(g).__name__ == "DynamicGridDim" else int(g) for g in gm.grid)
    _check_grid(grid, source)
    points, n = _grid_points(grid)
    prefetched = [ScalarRef(np.array(v)) for v in values[gm.num_dynamic_grid_bounds:]]
    body = eqn.params["jaxpr"]
    run = KernelRun(grid)

    def indices(index_fn) -> np.ndarray:
        rows = []
        for p in range(n):
            point = tuple(int(points[a, p]) for a in range(len(grid)))
            run.at(p, point)
            out = run.run(index_fn.jaxpr, [np.int32(i) for i in point] + prefetched, index_fn.consts)
            if any(v is None for v in out):
                raise InputError("an index map depends on values the capture cannot follow (it reads something "
                                 "other than the grid position and scalar-prefetched arrays)", source=source)
            rows.append([int(v) for v in out])
        return np.asarray(rows, dtype=np.int64).T.reshape(-1, n)

    in_hbm = [memory_space(v) in ("any", "hbm") for v in body.invars[gm.num_index_operands:]]
    operands, tensors, buffers_bytes, depth, _ = _block_operands(eqn, points, n, source, indices, skip=in_hbm)
    names = _operand_names(gm)
    refs: list = list(prefetched)
    for var, name, hbm in zip(body.invars[gm.num_index_operands:], names, in_hbm):
        refs.append(MemoryRef(memory_space(var), name if hbm else None))
    for aval, var in zip(gm.scratch_avals, body.invars[len(refs):]):
        smem = memory_space(var) == "smem" and np.issubdtype(np.dtype(aval.dtype), np.number)
        refs.append(ScalarRef(np.zeros(aval.shape, aval.dtype)) if smem else MemoryRef(memory_space(var)))
    for p in range(n):
        run.at(p, tuple(int(points[a, p]) for a in range(len(grid))))
        run.run(body, refs)
    operands += _dma_operands(run, gm, names, in_hbm, n)
    for name, aval, hbm in zip(names, _operand_avals(eqn, gm), in_hbm):
        if hbm:
            tensors[name] = {"shape": [int(d) for d in aval.shape] or [1], "dtype": _dtype_name(np.dtype(aval.dtype))}
    counter = WorkCounter(points, grid)
    counter.totals = run.totals
    compute_lists, which = counter.per_program()
    if run.unknown:
        metadata = {**metadata, "capture_bounds": dict(sorted(run.unknown.items()))}
    return _trace(eqn, metadata, grid, operands, compute_lists, which, tensors,
                  buffers_bytes + _scratch_bytes(gm), depth)


def _dma_operands(run, gm, names: list[str], in_hbm: list[bool], n: int) -> list[Operand]:
    """Per HBM operand and direction, the bytes the manual DMAs of each grid point move
    (copied whenever listed: no pipeline rule), keyed by where the first copy starts."""
    out = []
    for name, hbm in zip(names, in_hbm):
        if not hbm:
            continue
        for direction in ("read", "write"):
            moved = np.zeros(n)
            block = np.zeros(n, dtype=np.int64)
            for p, dmas in enumerate(run.dmas):
                mine = [d for d in dmas if d.tensor == name and d.direction == direction]
                moved[p] = sum(d.bytes for d in mine)
                block[p] = mine[0].block if mine else 0
            if moved.any():
                out.append(Operand(name, direction, (block,), moved, pipelined=False))
    return out


def _operand_names(gm) -> list[str]:
    counts: dict[str, int] = defaultdict(int)
    return [_tensor_name("write" if i >= gm.num_inputs else "read", counts)
            for i in range(gm.num_inputs + gm.num_outputs)]


def _operand_avals(eqn, gm) -> list:
    inputs = [v.aval for v in eqn.invars[gm.num_dynamic_grid_bounds + gm.num_index_operands:]]
    outputs = [v.aval for v in eqn.outvars]
    return inputs[:gm.num_inputs] + outputs


def _check_grid(grid: tuple[int, ...], source: str) -> None:
    if grid and min(grid) == 0:
        raise InputError(f"the kernel was launched with no programs (grid {list(grid)}): nothing to capture; give "
                         "parameters that make work", source=source)
    check_programs(math.prod(grid), source=source, field=None)  # before the index maps are evaluated at every point


def _grid_points(grid: tuple[int, ...]) -> tuple[np.ndarray, int]:
    points = np.indices(grid).reshape(len(grid), -1) if grid else np.zeros((0, 1), dtype=np.int64)
    return points, points.shape[1] if grid else 1


def _vmapped_indices(index_fn, points: np.ndarray, n: int, grid: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    import jax
    from jax.extend.core import jaxpr_as_fun

    fn = jaxpr_as_fun(index_fn)
    raw = jax.vmap(lambda *g: fn(*g))(*[np.asarray(p, dtype=np.int32) for p in points]) if grid else fn()
    return tuple(np.asarray(a, dtype=np.int64).reshape(n) for a in raw)


def _block_operands(eqn, points: np.ndarray, n: int, source: str, indices, skip: list[bool] | None = None):
    """Each block-mapped operand's per-point block indices and in-bounds bytes, its tensor,
    the VMEM its buffers hold, the deepest buffering, and per operand the rows in bounds
    along each axis of its ref. ``skip``: operands left in HBM (``pl.ANY``), which only
    manual DMAs move."""
    gm = eqn.params["grid_mapping"]
    operands, tensors, buffers_bytes, depth = [], {}, 0, 2
    counts = defaultdict(int)
    extents: list[list[np.ndarray]] = []
    for i, mapping in enumerate(gm.block_mappings):
        direction = "write" if str(mapping.origin).startswith("out") else "read"
        name = _tensor_name(direction, counts)
        if skip is not None and skip[i]:
            extents.append([])
            continue
        shape = tuple(int(s) for s in mapping.array_aval.shape)
        dtype = np.dtype(mapping.array_aval.dtype)
        block = _block_sizes(mapping.block_shape, source)
        index = tuple(indices(mapping.index_map_jaxpr))
        valid = np.ones(n, dtype=np.int64)
        ref_axes = []
        for axis, (size, entry) in enumerate(zip(block, mapping.block_shape)):
            offset = index[axis] * size
            in_bounds = np.clip(shape[axis] - offset, 0, size)
            valid *= in_bounds
            if not (entry is None or type(entry).__name__ == "Squeezed"):  # squeezed axes are not the ref's
                ref_axes.append(in_bounds)
        extents.append(ref_axes)
        buffers = _buffer_count(mapping)
        depth = max(depth, buffers)
        buffers_bytes += buffers * math.prod(block) * dtype.itemsize
        operands.append(Operand(name, direction, index, valid * dtype.itemsize))
        tensors[name] = {"shape": list(shape) or [1], "dtype": _dtype_name(dtype)}
    return operands, tensors, buffers_bytes, depth, extents


def _scratch_bytes(gm) -> int:
    """VMEM the scratch buffers hold (semaphores and other non-array scratch: none)."""
    total = 0
    for aval in gm.scratch_avals:
        try:
            itemsize = np.dtype(aval.dtype).itemsize
        except TypeError:  # a semaphore type
            continue
        space = str(getattr(getattr(aval, "memory_space", None), "value", "")).lower()
        if space not in ("smem", "semaphore_mem"):
            total += math.prod(aval.shape) * itemsize
    return int(total)


def _trace(eqn, metadata, grid, operands, compute_lists, which, tensors, local_memory_bytes, depth) -> KernelTrace:
    semantics = _dimension_semantics(eqn.params.get("compiler_params"), len(grid)) if grid else ["arbitrary"]
    return pallas_trace(
        name=str(eqn.params.get("name") or metadata.get("name") or "pallas_kernel"),
        grid=list(grid) or [1],
        dimension_semantics=semantics,
        operands=operands,
        compute=lambda selection: compute_lists[int(which[np.argmax(selection)])],
        compute_key=which.astype(float),
        tensors=tensors,
        local_memory_bytes=int(local_memory_bytes),
        buffer_count=depth,
        metadata=metadata,
    )


def _tensor_name(direction: str, counts: dict[str, int]) -> str:
    """``in0, in1, ...`` for inputs and ``out0, ...`` for outputs, in operand order."""
    prefix = "out" if direction == "write" else "in"
    name = f"{prefix}{counts[prefix]}"
    counts[prefix] += 1
    return name


def _block_sizes(block_shape, source: str) -> tuple[int, ...]:
    sizes = []
    for entry in block_shape:
        size = getattr(entry, "block_size", None)
        if type(entry).__name__ in ("Element", "BoundedSlice"):  # offsets in elements, not block indices
            raise InputError(f"block dimension {shown(entry)} is not supported yet", source=source)
        if size is None:
            if entry is None or type(entry).__name__ == "Squeezed":
                size = 1
            else:
                raise InputError(f"block dimension {shown(entry)} is not supported yet", source=source)
        sizes.append(int(size))
    return tuple(sizes)


def _buffer_count(mapping) -> int:
    mode = getattr(mapping, "pipeline_mode", None)
    count = getattr(mode, "buffer_count", None)
    return int(count) if count else 2


def _dimension_semantics(params: Any, axes: int) -> list[str]:
    semantics = getattr(params, "dimension_semantics", None)
    if semantics is None and isinstance(params, Mapping):
        semantics = (params.get("mosaic") or params).get("dimension_semantics")
    if not semantics:
        return ["arbitrary"] * axes
    return ["parallel" if "parallel" in str(s).lower() else "arbitrary" for s in semantics]


SAME_WIDTH = {1: "int8", 2: "fp16", 4: "fp32", 8: "fp64"}
"""The trace format has no other integer types: they are recorded under the type of the
same width, as Triton capture does (only their bytes matter)."""


def _dtype_name(dtype: np.dtype) -> str:
    return DTYPE_NAMES.get(dtype.name) or SAME_WIDTH.get(dtype.itemsize, "fp32")


def _primitives(jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for sub in _sub_jaxprs(eqn):
            names |= _primitives(sub)
    return names


# ---------------------------------------------------------------- work in the kernel body

def _int_div(a, b):
    """lax.div: integer division rounds toward zero."""
    a, b = np.asarray(a), np.asarray(b)
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))
    return a / b


_SCALAR_OPS = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    # and/or/not/xor are bitwise on integers and logical on booleans, as numpy's bitwise ops are
    "ge": np.greater_equal, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "rem": np.fmod, "max": np.maximum,
    "min": np.minimum, "div": _int_div, "neg": np.negative, "abs": np.abs, "sign": np.sign, "not": np.invert,
    "select_n": lambda which, *cases: np.choose(np.asarray(which, dtype=np.int64), cases),
}


class WorkCounter:
    """Counts a kernel body's work per grid point.

    Scalars computed from ``program_id`` / ``num_programs`` and literals are evaluated
    for every grid point, so a ``pl.when`` (a ``cond``) whose predicate depends only on
    the grid position counts its taken branch where it is taken. Other ``cond``s count
    every branch (an upper bound)."""

    def __init__(self, points: np.ndarray, grid: tuple[int, ...]) -> None:
        self.points, self.grid = points, grid
        self.n = points.shape[1] if points.size else 1
        self.totals: dict[tuple, np.ndarray] = {}
        """Per key, work per grid point: matrix keys count executed flops (padding included)."""
        self.useful: dict[tuple, np.ndarray] = {}
        """Per matrix key, the flops of the products whose operands are in bounds."""
        self.ref_extents: dict[Any, list[np.ndarray]] = {}
        """Block refs of the body -> per axis, the rows in bounds at each grid point."""
        self.loaded: dict[Any, list[np.ndarray]] = {}
        """Values loaded whole from a block ref (or converted from one) -> its extents."""

    def per_program(self) -> tuple[list[list[Compute]], np.ndarray]:
        """Distinct compute lists and, per grid point, which one it runs."""
        keys = sorted(self.totals, key=str)
        if not keys:
            return [[]], np.zeros(self.n, dtype=np.int64)
        useful = {k: self.useful.get(k, self.totals[k]) for k in keys}
        table = np.stack([self.totals[k] for k in keys] + [useful[k] for k in keys], axis=1)
        rows, which = unique_rows(table)
        lists = [[_compute(key, flops, kept) for key, flops, kept in zip(keys, row[:len(keys)], row[len(keys):])
                  if flops > 0] for row in rows]
        return lists, which.reshape(-1)

    def count(self, jaxpr, weight: np.ndarray, known: dict | None = None) -> None:
        values = dict(known or {})
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            self._evaluate_scalar(eqn, values)
            if name == "get" and eqn.invars[0] in self.ref_extents:
                axes = self.ref_extents[eqn.invars[0]]
                if tuple(_shape(eqn.outvars[0])) == tuple(_shape(eqn.invars[0])):  # the whole block
                    self.loaded[eqn.outvars[0]] = axes
            elif name in VALUE_PRESERVING and len(eqn.outvars) == 1:
                # a conversion, or a mask applied to a loaded block (a select against a
                # constant, often inside a jit): the same elements, in bounds where it was
                found = [self.loaded[v] for v in eqn.invars
                         if not hasattr(v, "val") and v in self.loaded and _shape(v) == _shape(eqn.outvars[0])]
                if len(found) == 1:
                    self.loaded[eqn.outvars[0]] = found[0]
            if name == "dot_general":
                key = _dot_key(eqn)
                self._add(key, weight * _dot_flops(eqn))
                self._add_useful(key, weight * self._useful_dot_flops(eqn))
            elif name in TRANSCENDENTAL:
                self._add(("special", "fp32", (), True), weight * _numel(eqn.outvars[0]))
            elif name in ELEMENTWISE and _numel(eqn.outvars[0]) > 1:  # scalars run on the scalar unit
                # a comparison's work is in its operands' dtype; integer and boolean work
                # (index and mask arithmetic), conversions and selects cost time but are not flops
                var = eqn.invars[0] if name in COMPARISONS else eqn.outvars[0]
                useful = _is_float(var) and name not in NOT_FLOPS
                self._add(("vector", _var_dtype(var), (), useful), weight * _numel(eqn.outvars[0]))
            elif name in REDUCTIONS:
                var = eqn.invars[0]
                self._add(("vector", _var_dtype(var), (), _is_float(var)), weight * _numel(var))
            elif name == "cond":
                self._count_cond(eqn, weight, values)
            elif name == "scan":
                self.count(eqn.params["jaxpr"].jaxpr, weight * int(eqn.params["length"]))
            elif name == "while" and (trips := _while_trips(eqn, values)) is not None:
                self.count(eqn.params["body_jaxpr"].jaxpr, weight * trips)
            else:
                for sub in _sub_jaxprs(eqn):
                    self.count(sub, weight)

    def _count_cond(self, eqn, weight: np.ndarray, values: dict) -> None:
        branches = eqn.params["branches"]
        index = _lookup(eqn.invars[0], values)
        for b, branch in enumerate(branches):
            if index is None:
                taken = weight  # predicate not known per grid point: count every branch
            else:
                taken = weight * (np.clip(np.asarray(index, dtype=np.int64), 0, len(branches) - 1) == b)
            self.count(branch.jaxpr, taken)

    def _evaluate_scalar(self, eqn, values: dict) -> None:
        """Per-grid-point values of scalars computed from the grid position."""
        name = eqn.primitive.name
        if name == "program_id":
            values[eqn.outvars[0]] = self.points[eqn.params["axis"]]
            return
        if name == "num_programs":
            values[eqn.outvars[0]] = np.full(self.n, self.grid[eqn.params["axis"]])
            return
        if any(_numel(v) != 1 for v in eqn.outvars):
            return
        args = [_lookup(v, values) for v in eqn.invars]
        if any(a is None for a in args):
            return
        if name == "convert_element_type":
            values[eqn.outvars[0]] = np.asarray(args[0]).astype(np.dtype(eqn.params["new_dtype"]))
        elif name in _SCALAR_OPS:
            values[eqn.outvars[0]] = _SCALAR_OPS[name](*args)
        else:
            subs = list(_sub_jaxprs(eqn))
            if name in ("pjit", "jit", "closed_call") and len(subs) == 1:
                inner = dict(zip(subs[0].invars, args))
                for sub_eqn in subs[0].eqns:
                    self._evaluate_scalar(sub_eqn, inner)
                for out, sub_out in zip(eqn.outvars, subs[0].outvars):
                    value = _lookup(sub_out, inner)
                    if value is not None:
                        values[out] = value

    def _add(self, key: tuple, flops: np.ndarray) -> None:
        if key not in self.totals:
            self.totals[key] = np.zeros(self.n)
        self.totals[key] = self.totals[key] + flops

    def _add_useful(self, key: tuple, flops: np.ndarray) -> None:
        self.useful[key] = self.useful.get(key, np.zeros(self.n)) + flops

    def _useful_dot_flops(self, eqn) -> np.ndarray | float:
        """A dot's flops over the products whose operands are in bounds: where both come
        whole from block refs, a ragged edge block's rows and columns past the array
        count nothing (their zeros or garbage are padding); otherwise the block's."""
        lhs, rhs = (self.loaded.get(v) for v in eqn.invars[:2])
        if lhs is None or rhs is None:
            return _dot_flops(eqn)
        (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = eqn.params["dimension_numbers"]

        def product(axes: list[np.ndarray], dims) -> np.ndarray:
            out = np.ones(self.n)
            for d in dims:
                out = out * axes[d]
            return out

        m = product(lhs, [d for d in range(len(lhs)) if d not in lhs_contract and d not in lhs_batch])
        n = product(rhs, [d for d in range(len(rhs)) if d not in rhs_contract and d not in rhs_batch])
        k = np.minimum(product(lhs, lhs_contract), product(rhs, rhs_contract))
        return 2.0 * product(lhs, lhs_batch) * m * n * k


def _while_trips(eqn, values: dict) -> np.ndarray | None:
    """Per grid point, how often a ``while`` loop runs its body, when it is a counted loop
    (``lax.fori_loop`` with bounds not known at trace time): the condition is ``i < end``
    on two carried values, the body adds 1 to ``i`` and passes ``end`` on, and both start
    values are computed from the grid position and literals. None otherwise."""
    cond, body = eqn.params["cond_jaxpr"].jaxpr, eqn.params["body_jaxpr"].jaxpr
    n_cond, n_body = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    if len(cond.eqns) != 1 or cond.eqns[0].primitive.name != "lt" or cond.eqns[0].outvars[0] is not cond.outvars[0]:
        return None
    carried = cond.invars[n_cond:]
    position = [next((p for p, v in enumerate(carried) if v is x), None) for x in cond.eqns[0].invars]
    if None in position:
        return None
    counter, end = position
    body_in = body.invars[n_body:]
    if body.outvars[end] is not body_in[end]:
        return None
    increments = [e for e in body.eqns if e.primitive.name == "add" and e.outvars[0] is body.outvars[counter]]
    if not increments or increments[0].invars[0] is not body_in[counter]:
        return None
    step = increments[0].invars[1]
    if not hasattr(step, "val") or int(np.asarray(step.val)) != 1:
        return None
    start = _lookup(eqn.invars[n_cond + n_body + counter], values)
    stop = _lookup(eqn.invars[n_cond + n_body + end], values)
    if start is None or stop is None:
        return None
    return np.maximum(np.asarray(stop, dtype=np.int64) - np.asarray(start, dtype=np.int64), 0)


def _lookup(var, values: dict):
    if hasattr(var, "val"):  # a literal
        return np.asarray(var.val)
    return values.get(var)


def _compute(key: tuple, flops: float, useful_flops: float | None = None) -> Compute:
    """One entry of a step's compute: ``flops`` executed; for the matrix unit the shape
    runs ``count`` times and ``useful_flops`` (default all) are the products in bounds."""
    unit, dtype, shape, useful = key
    if unit != "matrix":
        return Compute(unit=unit, flops=float(flops), dtype=dtype, useful=useful)
    m, n, k = shape
    count = max(1, round(flops / (2.0 * m * n * k)))
    kept = flops if useful_flops is None else min(float(useful_flops), float(flops))
    return Compute(unit=unit, flops=float(kept), dtype=dtype, shape=list(shape), count=count)


def _dot_key(eqn) -> tuple:
    m, n, k, _ = _dot_dims(eqn)
    return ("matrix", _var_dtype(eqn.invars[0]), (m, n, k), True)


def _dot_flops(eqn) -> float:
    m, n, k, batch = _dot_dims(eqn)
    return 2.0 * batch * m * n * k


def _dot_dims(eqn) -> tuple[int, int, int, int]:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = eqn.params["dimension_numbers"]
    lhs, rhs = (tuple(int(d) for d in v.aval.shape) for v in eqn.invars[:2])
    k = math.prod(lhs[d] for d in lhs_contract)
    batch = math.prod(lhs[d] for d in lhs_batch)
    m = math.prod(s for d, s in enumerate(lhs) if d not in lhs_contract and d not in lhs_batch)
    n = math.prod(s for d, s in enumerate(rhs) if d not in rhs_contract and d not in rhs_batch)
    return m, n, k, batch


def _shape(var) -> tuple[int, ...]:
    return tuple(int(d) for d in getattr(var.aval, "shape", ()))


def _numel(var) -> int:
    return math.prod(int(d) for d in getattr(var.aval, "shape", ()))


def _var_dtype(var) -> str:
    return _dtype_name(np.dtype(var.aval.dtype))


def _is_float(var) -> bool:
    """Floating point, bf16 and fp8 included (ml_dtypes' types are not numpy subtypes of
    ``inexact``)."""
    dtype = np.dtype(var.aval.dtype)
    return not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.bool_))
