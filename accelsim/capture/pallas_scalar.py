"""Pallas TPU kernels whose work depends on values known only at run time, captured by
running their scalar part, grid step after grid step.

Three things make a kernel so (and :mod:`accelsim.capture.pallas` sends it here):

* **scalar prefetch** (``PrefetchScalarGridSpec``): arrays copied to SMEM before the grid
  runs, which index maps and the body read (a grouped matmul's group offsets, a paged
  attention's page table, a splash attention's mask block lists);
* **dynamic grid dimensions** (a grid size passed as an array);
* **manual DMAs** (``pltpu.make_async_copy(src.at[...], dst.at[...], sem).start()`` /
  ``.wait()``: double buffering by hand from operands left in HBM with
  ``memory_space=pl.ANY``).

Their values come from the program that launches the kernel (the part of its jaxpr that
computes the scalar operands, evaluated on the CPU: :func:`operand_values`). Then, for
every grid point in launch order, :class:`KernelRun` executes the body's scalar
operations for real (``program_id``, SMEM reads and writes, which persist from one grid
step to the next as they do on the chip, ``pl.when`` branches, ``while`` loops whose
trip counts depend on the data) and counts what the vector and matrix units do on the
way and the bytes each DMA moves. Index maps that read scalar-prefetched values are run
the same way. What stays unknown is counted: a branch whose predicate depends on an
array (all its branches counted), a loop whose condition does (its body counted once).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accelsim.capture.pallas import (
    COMPARISONS,
    ELEMENTWISE,
    NOT_FLOPS,
    REDUCTIONS,
    TRANSCENDENTAL,
    _SCALAR_OPS,
    _dot_flops,
    _dot_key,
    _is_float,
    _numel,
    _sub_jaxprs,
    _var_dtype,
)
from accelsim.errors import InputError

MAX_LOOP_TRIPS = 100_000
"""Trips of one loop at one grid point before the capture gives up (one line)."""
MAX_EQUATIONS = 20_000_000
"""Body operations the capture runs over the whole grid before it gives up: the scalar
part runs in Python, about a microsecond each."""
MANUAL_DMA = frozenset({"dma_start"})
HBM_SPACES = ("any", "hbm")
"""Memory spaces of operands left in HBM (``pl.ANY``, ``pltpu.HBM``)."""
CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                   "custom_vjp_call_jaxpr", "remat", "checkpoint"})


def memory_space(var) -> str:
    """``any``, ``vmem``, ``smem``, ``semaphore_mem``, ... of a ref; ``""`` for values."""
    space = getattr(var.aval, "memory_space", None)
    return str(getattr(space, "value", space) or "").lower()


@dataclass
class ScalarRef:
    """An SMEM array whose values are known (scalar prefetch, SMEM scratch)."""

    values: np.ndarray


@dataclass(frozen=True)
class MemoryRef:
    """A ref whose contents are not followed: a block in VMEM, an operand in HBM (``tensor``
    names it in the trace), a semaphore."""

    space: str
    tensor: str | None = None


@dataclass(frozen=True)
class Dma:
    tensor: str
    direction: str
    """``read`` (HBM to VMEM) or ``write`` (VMEM to HBM)."""
    bytes: int
    block: int
    """Index along the tensor's first axis the copy starts at, in units of its extent
    there (a key for which block moved; clipped into the axis)."""


@dataclass
class KernelRun:
    """Runs a kernel body's scalar part at each grid point and counts its work and DMAs."""

    grid: tuple[int, ...]
    totals: dict[tuple, np.ndarray] = field(default_factory=dict)
    dmas: list[list[Dma]] = field(default_factory=list)
    unknown: Counter = field(default_factory=Counter)
    """What could only be bounded: ``cond`` on an array value (every branch counted),
    ``while`` on one (body counted once), remote DMAs (counted, not modelled)."""
    point: tuple[int, ...] = ()
    _p: int = 0
    _budget: int = MAX_EQUATIONS

    def __post_init__(self) -> None:
        self.n = math.prod(self.grid)

    def at(self, p: int, point: tuple[int, ...]) -> None:
        """Work and DMAs from now on belong to grid point ``p`` (launch order) at ``point``."""
        self._p, self.point = p, point
        if len(self.dmas) <= p:
            self.dmas.append([])

    # ------------------------------------------------------------ interpretation

    def run(self, jaxpr, args: list, consts: list = ()) -> list:
        env: dict = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, args))
        self._budget -= len(jaxpr.eqns)
        if self._budget < 0:
            raise InputError(f"the kernel's scalar part runs more than {MAX_EQUATIONS:,} operations over its grid; "
                             "capture a smaller problem", source="capture")
        for eqn in jaxpr.eqns:
            ins = [_read(v, env) for v in eqn.invars]
            outs = self._equation(eqn, ins)
            for var, value in zip(eqn.outvars, outs):
                env[var] = value
        return [_read(v, env) for v in jaxpr.outvars]

    def _equation(self, eqn, ins: list) -> list:
        name = eqn.primitive.name
        unknown = [None] * len(eqn.outvars)
        if name == "program_id":
            return [np.int32(self.point[eqn.params["axis"]])]
        if name == "num_programs":
            return [np.int32(self.grid[eqn.params["axis"]])]
        if name in ("get", "swap", "addupdate"):
            return self._state(eqn, ins)
        if name in MANUAL_DMA:
            self._dma(eqn, ins)
            return unknown
        if name == "cond":
            return self._cond(eqn, ins)
        if name == "while":
            return self._while(eqn, ins)
        if name == "scan":
            return self._scan(eqn, ins)
        if name == "run_scoped":
            inner = eqn.params["jaxpr"]
            scoped = [MemoryRef(memory_space(v)) for v in inner.invars[len(ins):]]
            return self.run(inner, ins + scoped)[:len(eqn.outvars)]
        subs = list(_closed_sub_jaxprs(eqn))
        if name in CALLS and len(subs) == 1:
            inner, consts = subs[0]
            return self.run(inner, ins, consts)
        self._count(eqn)
        if all(_numel(v) == 1 for v in eqn.outvars) and ins and all(_known(a) for a in ins):
            return self._scalar(eqn, ins)
        for inner, consts in subs:  # work inside other higher-order ops, once, with nothing known
            self.run(inner, [None] * len(inner.invars), consts)
        return unknown

    def _scalar(self, eqn, ins: list) -> list:
        name = eqn.primitive.name
        if name == "convert_element_type":
            return [np.asarray(ins[0]).astype(np.dtype(eqn.params["new_dtype"]))]
        if name in _SCALAR_OPS and len(eqn.outvars) == 1:
            with np.errstate(all="ignore"):
                return [np.asarray(_SCALAR_OPS[name](*ins))]
        if name in ("squeeze", "reshape", "broadcast_in_dim") and len(eqn.outvars) == 1:
            return [np.asarray(ins[0]).reshape(())]
        return [None] * len(eqn.outvars)

    def _state(self, eqn, ins: list) -> list:
        """SMEM reads and writes of known arrays; anything else is a load or store whose
        values are not followed."""
        name = eqn.primitive.name
        ref = ins[0]
        values_in = 2 if name in ("swap", "addupdate") else 1
        index = _index(eqn, ins[values_in:]) if isinstance(ref, ScalarRef) else None
        if index is None:
            return [None] * len(eqn.outvars)
        old = np.array(ref.values[index])
        if name == "swap" and _known(ins[1]):
            ref.values[index] = ins[1]
        elif name == "addupdate" and _known(ins[1]):
            ref.values[index] += ins[1]
        return [old] if eqn.outvars else []

    def _dma(self, eqn, ins: list) -> None:
        """A DMA between an HBM operand and VMEM: its bytes (the shape of the slice it
        moves) and where along the operand's first axis it starts."""
        import jax

        variables = jax.tree_util.tree_unflatten(eqn.params["tree"], eqn.invars)
        values = jax.tree_util.tree_unflatten(eqn.params["tree"], ins)
        if len(values) > 4 and values[4] is not None:
            self.unknown["remote_dma_not_modelled"] += 1
            return
        for side, direction in ((0, "read"), (1, "write")):
            ref = getattr(values[side], "ref", values[side])
            if isinstance(ref, MemoryRef) and ref.tensor is not None:
                shape, dtype = _transferred_shape(variables[side])
                start, extent = _first_axis_start(values[side])
                self.dmas[self._p].append(Dma(ref.tensor, direction, int(math.prod(shape) * dtype.itemsize),
                                              0 if start is None else start // max(1, extent)))
                return  # VMEM to VMEM moves no HBM bytes

    def _cond(self, eqn, ins: list) -> list:
        branches = eqn.params["branches"]
        which = ins[0]
        if _known(which):
            chosen = branches[int(np.clip(int(which), 0, len(branches) - 1))]
            return self.run(chosen.jaxpr, ins[1:], chosen.consts)
        self.unknown["cond_on_an_array_every_branch_counted"] += 1
        for branch in branches:
            self.run(branch.jaxpr, ins[1:], branch.consts)
        return [None] * len(eqn.outvars)

    def _while(self, eqn, ins: list) -> list:
        cond, body = eqn.params["cond_jaxpr"], eqn.params["body_jaxpr"]
        n_cond, n_body = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
        cond_consts, body_consts, carry = ins[:n_cond], ins[n_cond:n_cond + n_body], ins[n_cond + n_body:]
        for _ in range(MAX_LOOP_TRIPS):
            go = self.run(cond.jaxpr, cond_consts + carry, cond.consts)[0]
            if not _known(go):
                self.unknown["while_on_an_array_body_counted_once"] += 1
                self.run(body.jaxpr, body_consts + carry, body.consts)
                return [None] * len(eqn.outvars)
            if not bool(go):
                return carry
            carry = self.run(body.jaxpr, body_consts + carry, body.consts)
        raise InputError(f"a while loop in the kernel ran more than {MAX_LOOP_TRIPS:,} trips at grid point "
                         f"{list(self.point)}", source="capture")

    def _scan(self, eqn, ins: list) -> list:
        body = eqn.params["jaxpr"]
        n_consts, n_carry = eqn.params["num_consts"], eqn.params["num_carry"]
        consts, carry = ins[:n_consts], ins[n_consts:n_consts + n_carry]
        xs = [None] * (len(ins) - n_consts - n_carry)
        length = int(eqn.params["length"])
        if length > MAX_LOOP_TRIPS:
            raise InputError(f"a scan in the kernel runs {length:,} trips (at most {MAX_LOOP_TRIPS:,})",
                             source="capture")
        for _ in range(length):
            carry = self.run(body.jaxpr, consts + carry + xs, body.consts)[:n_carry]
        return carry + [None] * (len(eqn.outvars) - n_carry)

    # ------------------------------------------------------------ work

    def _count(self, eqn) -> None:
        """The vector and matrix work of one operation, as :class:`~accelsim.capture.pallas.WorkCounter`
        keys it (scalar operations run on the scalar unit and count nothing)."""
        name = eqn.primitive.name
        if name == "dot_general":
            self._add(_dot_key(eqn), _dot_flops(eqn))
        elif name in TRANSCENDENTAL and _numel(eqn.outvars[0]) > 1:
            self._add(("special", "fp32", (), True), _numel(eqn.outvars[0]))
        elif name in ELEMENTWISE and _numel(eqn.outvars[0]) > 1:
            var = eqn.invars[0] if name in COMPARISONS else eqn.outvars[0]
            self._add(("vector", _var_dtype(var), (), _is_float(var) and name not in NOT_FLOPS),
                      _numel(eqn.outvars[0]))
        elif name in REDUCTIONS and _numel(eqn.invars[0]) > 1:
            var = eqn.invars[0]
            self._add(("vector", _var_dtype(var), (), _is_float(var)), _numel(var))

    def _add(self, key: tuple, flops: float) -> None:
        if key not in self.totals:
            self.totals[key] = np.zeros(self.n)
        self.totals[key][self._p] += flops


def operand_values(closed, target, count: int) -> list[np.ndarray]:
    """The values of the first ``count`` operands of ``target`` (a ``pallas_call`` equation
    somewhere in ``closed``, a closed jaxpr of the user's function), computed on the CPU
    from what the function computes them from: only the operations they need run."""
    from jax._src import core
    from jax._src.interpreters import partial_eval as pe

    path = _path_to(closed.jaxpr, closed.consts, target)
    wanted = list(target.invars[:count])
    plans = []
    for level in range(len(path) - 1, -1, -1):
        jaxpr, consts, on_path = path[level]
        outs = [v for v in wanted if not isinstance(v, core.Literal)]
        needed = jaxpr.replace(outvars=outs, eqns=[e for e in jaxpr.eqns if e is not on_path])
        pruned, used = pe.dce_jaxpr(needed, [True] * len(outs), instantiate=True)
        used_invars = [v for v, u in zip(jaxpr.invars, used) if u]
        plans.insert(0, (pruned, consts, used_invars, outs))
        if level:
            parent = path[level - 1][2]
            wanted = [parent.invars[jaxpr.invars.index(v)] for v in used_invars]
    given: dict = {}
    values: dict = {}
    for level, (pruned, consts, used_invars, outs) in enumerate(plans):
        try:
            results = core.eval_jaxpr(pruned, consts, *[given[v] for v in used_invars])
        except Exception as exc:  # the values depend on something that only runs on a TPU
            raise InputError(f"the kernel's scalar operands could not be computed on the CPU: {type(exc).__name__}: "
                             f"{str(exc)[:160]}", source="capture") from None
        values = dict(zip(outs, results))
        if level + 1 < len(plans):
            parent, inner = path[level][2], path[level + 1][0]
            given = {v: _literal_or(parent.invars[inner.invars.index(v)], values) for v in plans[level + 1][2]}
    return [np.asarray(_literal_or(v, values)) for v in target.invars[:count]]


def _literal_or(var, values: dict):
    return np.asarray(var.val) if hasattr(var, "val") and not hasattr(var, "count") else values[var]


def _path_to(jaxpr, consts, target) -> list[tuple[Any, Any, Any]]:
    """(jaxpr, its consts, the equation in it) from the outermost jaxpr down to ``target``."""
    for eqn in jaxpr.eqns:
        if eqn is target:
            return [(jaxpr, consts, eqn)]
        for inner, inner_consts in _closed_sub_jaxprs(eqn):
            below = _path_to(inner, inner_consts, target)
            if below:
                return [(jaxpr, consts, eqn), *below]
    return []


def _closed_sub_jaxprs(eqn):
    """(jaxpr, consts) of every jaxpr an equation holds."""
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", None)
            if inner is not None and hasattr(inner, "eqns"):
                yield inner, list(getattr(item, "consts", ()))
            elif hasattr(item, "eqns"):
                yield item, []


def _read(var, env: dict):
    if hasattr(var, "val") and not hasattr(var, "count"):  # a literal
        return np.asarray(var.val)
    return env.get(var)


def _known(value) -> bool:
    return isinstance(value, np.ndarray | np.generic) and value.size == 1


def _index(eqn, flat_indexers: list) -> tuple | None:
    """The integer index a scalar ``get``/``swap`` of an SMEM array reads (all of its
    indices known), else None."""
    import jax

    transforms = jax.tree_util.tree_unflatten(eqn.params["tree"], flat_indexers)
    index: list[int] = []
    for transform in transforms:
        indices = getattr(transform, "indices", None)
        if indices is None:
            return None
        for entry in indices:
            start = getattr(entry, "start", entry)
            if getattr(entry, "size", 1) != 1:
                return None
            value = start if isinstance(start, int) else start
            if not (isinstance(value, int) or _known(value)):
                return None
            index.append(int(value))
    return tuple(index)


def _transferred_shape(moved) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of what a DMA of ``ref.at[...]`` moves (``moved`` holds variables)."""
    ref = getattr(moved, "ref", moved)
    shape = tuple(int(d) for d in ref.aval.shape)
    for transform in getattr(moved, "transforms", ()):
        if hasattr(transform, "get_indexer_shape"):
            shape = tuple(int(d) for d in transform.get_indexer_shape())
    return shape, np.dtype(ref.aval.dtype)


def _first_axis_start(moved) -> tuple[int | None, int]:
    """Where a DMA of ``ref.at[...]`` starts along the first axis (None: not known) and
    its extent there (``moved`` holds values)."""
    transforms = [t for t in getattr(moved, "transforms", ()) if getattr(t, "indices", None)]
    if not transforms:
        return 0, 1
    first = transforms[0].indices[0]
    start = getattr(first, "start", first)
    extent = int(getattr(first, "size", 1) or 1)
    if isinstance(start, int) or _known(start):
        return int(start), extent
    return None, extent
