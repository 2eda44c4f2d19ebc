"""Import scheduled XLA HLO text as a system trace: one SPMD program for all devices.

``jax.jit(f).lower(...).compile().as_text()`` (or an HLO dump of a TPU/GPU run) is a
per-device program after SPMD partitioning; its entry computation's instruction order
is the schedule. This module walks the entry computation in that order and emits one
op per instruction that does work:

* compute (fusions, dots, convolutions, custom calls, elementwise ops, copies) with
  flops and bytes from :mod:`accelsim.importers.hlo_cost`;
* collectives with their replica groups as device ids
  (:mod:`accelsim.importers.hlo_groups`); ``*-start`` / ``*-done`` pairs become an async
  op and a ``done`` op, so the window between them can overlap compute;
* control flow is expanded: ``call`` inlined, ``while`` bodies repeated their trip
  count (folded into one scaled pass when unrolling would exceed ``max_ops``),
  ``conditional`` takes its most expensive branch.

Data dependencies follow operands (through tuples, element by element);
``control-predecessors`` become control dependencies. The result is first an
intermediate :class:`HloProgram` (independent of the trace format), then a
:class:`~accelsim.system.trace.SystemTrace` (:func:`to_system_trace`).
See ``docs/import-hlo.md`` for what is counted how.
"""

from __future__ import annotations

import argparse
import gzip
import math
import re
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from accelsim.arch.model import config_files, load_arch
from accelsim.errors import MAX_INPUT_BYTES, InputError, read_text_file, shown
from accelsim.importers import Imported, Importer
from accelsim.importers.hlo_estimates import MAX_XLA_COUNT
from accelsim.importers.hlo_cost import FREE, NO_WORK_CUSTOM_CALLS, Cost, CostModel, async_wrapped
from accelsim.importers.hlo_sparsecore import offloaded_collective
from accelsim.importers.hlo_tpu_fusion import FusedCollective, fused_collective
from accelsim.importers.hlo_groups import (
    Groups,
    GroupSyntaxError,
    device_groups,
    device_pairs,
    group_mode,
    parse_groups,
    parse_pairs,
)
from accelsim.importers.hlo_text import (
    Computation,
    Instruction,
    Module,
    Shape,
    parse_module,
)
from accelsim.network import build_topology
from accelsim.system.replay import chip_of
from accelsim.system.trace import Op, Program, SystemTrace

DEFAULT_MAX_OPS = 20_000
"""Unroll ``while`` loops until the program would exceed this many ops; fold beyond."""

COLLECTIVE_OPCODES = {
    "all-reduce": "all-reduce", "all-reduce-start": "all-reduce",
    "all-gather": "all-gather", "all-gather-start": "all-gather",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all", "ragged-all-to-all": "all-to-all",
    "collective-broadcast": "broadcast",
    "collective-permute": "collective-permute", "collective-permute-start": "collective-permute",
}
"""HLO opcode -> system-trace op kind."""
ASYNC_STARTS = {"all-reduce-start", "all-gather-start", "collective-permute-start"}
ASYNC_DONES = {"all-reduce-done", "all-gather-done", "collective-permute-done", "async-done", "copy-done"}
PASS_THROUGH = {"bitcast", "opt-barrier", "domain", "add-dependency", "async-update"}
_ESTIMATED_CYCLES = re.compile(r'"estimated_cycles"\s*:\s*"?(\d{1,19})(?!\d)')
"""XLA's estimate (an int64: 19 digits at most; a longer number is no estimate, not an int
Python refuses to read past 4300 digits)."""
_ITERATION_BOUNDS = re.compile(r'"iteration_bounds"\s*:\s*\[([^\]]*)\]')
MAIN, ASYNC_COMPUTE = "main", "async_compute"
ATTENTION_DTYPES = ("bf16", "fp16", "fp8")
"""Fused-attention input types the ``attention`` family runs (others stay roofline ops)."""

DTYPES = {
    "f64": "fp64", "c128": "fp64", "f32": "fp32", "c64": "fp32", "bf16": "bf16", "f16": "fp16",
    "s8": "int8", "u8": "int8", "s4": "int4", "u4": "int4", "f4e2m1fn": "fp4",
}
"""HLO element type -> kernel-trace dtype (f8 types -> fp8; other integer types -> fp32)."""

WIDER = {"fp4": "fp8", "int4": "int8", "fp8": "bf16", "int8": "bf16", "fp16": "bf16", "bf16": "fp32",
         "tf32": "fp32", "fp64": "fp32"}
"""The next wider type to run an op at when the chip's unit has no rate for its own."""

Val = frozenset | tuple
"""What a value depends on: op names (an array) or one Val per tuple element."""


@dataclass(frozen=True)
class HloOp:
    """One op of the imported program (the intermediate form, before the trace format)."""

    name: str
    opcode: str
    kind: str
    """``compute``, a collective kind (``all-reduce``, ...), ``collective-permute`` or ``done``."""
    deps: tuple[str, ...] = ()
    ctrl_deps: tuple[str, ...] = ()
    cost: Cost = field(default_factory=Cost)
    comm_bytes: float = 0.0
    groups: Groups = ()
    pairs: tuple[tuple[int, int], ...] = ()
    is_async: bool = False
    start: str | None = None
    stream: str = MAIN
    repeat: int = 1
    """Trip count folded into this op's cost (1 when loops were unrolled)."""
    dtype: str = "f32"
    """HLO element type of the op's main operand or output."""
    family: str | None = None
    """A built-in kernel family that runs this op (a cuDNN fused attention), with ``params``."""
    params: tuple[tuple[str, Any], ...] = ()
    xla_cycles: float | None = None
    """XLA's own estimate of the op (``estimated_cycles`` of its ``backend_config``, the
    TPU compiler's cost model), times ``repeat``; ``None`` where XLA wrote none."""
    xla_windows: int | None = None
    """The windows XLA:TPU tiles the op into (the product of its ``backend_config``
    ``window_config.iteration_bounds``: the op runs as a pipelined loop over them), times
    ``repeat``; ``None`` where XLA wrote none."""
    fusion_kind: str = ""
    """``kind=`` of a fusion (``kLoop``, ``kOutput``, ``kInput``, ``kCustom``); empty for
    other ops."""


@dataclass(frozen=True)
class HloProgram:
    module_name: str
    num_devices: int
    replica_count: int
    num_partitions: int
    ops: tuple[HloOp, ...]
    counts: dict[str, int] = field(hash=False)
    """What was estimated or skipped: unknown opcodes, custom calls, folded loops, ..."""


@dataclass(frozen=True)
class BranchRates:
    """What a second costs on the target system, to weigh a conditional's branches by an
    estimate of their time: per flop (the matrix unit's peak), per HBM byte, and per byte
    a collective moves (the chip's interconnect bandwidth)."""

    flop_s: float
    byte_s: float
    comm_byte_s: float


def _leaf_deps(val: Val) -> frozenset:
    if isinstance(val, frozenset):
        return val
    out: frozenset = frozenset()
    for v in val:
        out |= _leaf_deps(v)
    return out


def _shaped(shape: Shape, deps: frozenset) -> Val:
    if shape.is_tuple:
        return tuple(_shaped(e, deps) for e in shape.elements)
    return deps


class _Lowering:
    """Walks computations in schedule order, emitting ops: compute and async starts and
    dones here; collectives, sends and receives through :class:`_Communication`; loop
    trip counts and branch weights from :class:`_Estimates`."""

    def __init__(self, module: Module, max_ops: int, rates: BranchRates | None = None) -> None:
        self.module = module
        self.costs = CostModel(module)
        self.max_ops = max_ops
        self.ops: list[HloOp] = []
        self.counts: Counter[str] = Counter()
        self.estimates = _Estimates(module, self.costs, rates)
        self.comm = _Communication(module, self.costs, self.counts, self._emit)
        self._async_names: set[str] = set()
        self._chains: dict[str, str] = {}
        """Async collective fusions: chain -> the op its latest start emitted."""
        self._offloads: dict[str, Computation] = {}
        """SparseCore custom-call starts and updates seen (by prefixed name) -> what they run."""

    # ------------------------------------------------------------ walking

    def run(self, comp: Computation, args: list[Val], prefix: str, scale: int) -> Val:
        env: dict[str, Val] = {}
        ops_of: dict[str, frozenset] = {}
        for inst in comp.instructions:
            before = len(self.ops)
            env[inst.name] = self._instruction(comp, inst, env, args, prefix, scale)
            ops_of[inst.name] = frozenset(op.name for op in self.ops[before:])
            if inst.control_predecessors and len(self.ops) > before:
                ctrl = frozenset().union(*(ops_of.get(p, frozenset()) | _leaf_deps(env.get(p, frozenset()))
                                           for p in inst.control_predecessors))
                for i in range(before, len(self.ops)):
                    op = self.ops[i]
                    extra = tuple(sorted(ctrl - set(op.deps) - {op.name}))
                    if extra:
                        self.ops[i] = replace(op, ctrl_deps=op.ctrl_deps + extra)
        return env[comp.root.name]

    def _instruction(self, comp: Computation, inst: Instruction, env: dict[str, Val], args: list[Val],
                     prefix: str, scale: int) -> Val:
        op = inst.opcode
        operands = [env[o] for o in inst.operands]
        deps = frozenset().union(*(_leaf_deps(v) for v in operands)) if operands else frozenset()
        if op == "parameter":
            number = int(inst.attrs.get("parameter_number", "0"))
            return args[number] if number < len(args) else _shaped(inst.shape, frozenset())
        if op == "get-tuple-element":
            source = operands[0]
            index = int(inst.attrs.get("index", "0"))
            return source[index] if isinstance(source, tuple) and index < len(source) else _leaf_deps(source)
        if op == "tuple":
            return tuple(operands)
        if op in PASS_THROUGH:
            if op == "add-dependency" or not operands:
                return _shaped(inst.shape, deps)
            return operands[0]
        if op in ("recv", "recv-done"):
            return self.comm.recv(inst, operands, deps)
        if op in FREE:
            return _shaped(inst.shape, deps)
        if op == "custom-call" and _target(inst) in NO_WORK_CUSTOM_CALLS:
            self.counts[f"no_work_custom_call:{_target(inst)}"] += 1
            return _shaped(inst.shape, deps)
        if op == "fusion" and (fused := fused_collective(self.module, inst)) is not None:
            return self._collective_fusion(comp, inst, fused, deps, prefix, scale)
        if op in ("custom-call-start", "custom-call-update", "custom-call-done") and (
                (offloaded := self._sparsecore(comp, inst, operands, deps, prefix, scale)) is not None):
            return offloaded
        if (wrapped := async_wrapped(inst)) is not None:
            return self._short_async(comp, inst, wrapped, env, args, operands, prefix, scale)
        if op == "while":
            return self._while(comp, inst, operands, prefix, scale)
        if op == "call":
            return self.run(self._called(inst, 0), operands, f"{prefix}{inst.name}/", scale)
        if op == "conditional":
            return self._conditional(inst, operands, prefix, scale)
        if op == "async-start":
            return self._async_start(inst, operands, prefix, scale)
        if op in ASYNC_DONES:
            return self._done(inst, operands, prefix)
        if op in COLLECTIVE_OPCODES:
            return self.comm.collective(comp, inst, deps, prefix, scale, is_async=op in ASYNC_STARTS)
        if op == "send":
            return self.comm.send(comp, inst, deps, prefix, scale)
        return self._compute(comp, inst, deps, prefix, scale, MAIN)

    def _emit(self, op: HloOp) -> str:
        self.ops.append(op)
        if op.is_async:
            self._async_names.add(op.name)
        return op.name

    def _called(self, inst: Instruction, index: int) -> Computation:
        return self.module.computations[inst.called()[index]]

    # ------------------------------------------------------------ compute

    def _compute(self, comp: Computation, inst: Instruction, deps: frozenset, prefix: str, scale: int,
                 stream: str) -> Val:
        cost = self.costs.cost(comp, inst)
        if inst.opcode == "copy-start":  # a DMA (a TPU's prefetch into VMEM) beside the compute
            stream = ASYNC_COMPUTE
        dtype = cost.matrix_dtype if cost.matrix_flops else _main_dtype(inst.shape)
        family, params = None, ()
        attention = self.costs.fmha(comp, inst)
        if attention is not None and _trace_dtype(attention["dtype"]) in ATTENTION_DTYPES:
            # a folded loop's trips run as one call over trips x the batch (the same programs)
            attention = {**attention, "batch": attention["batch"] * scale, "dtype": _trace_dtype(attention["dtype"])}
            family, params = "attention", tuple(attention.items())
            self.counts[f"attention_family:{attention['pass']}"] += 1
        config = inst.attrs.get("backend_config", "")
        cycles, windows = _ESTIMATED_CYCLES.search(config), xla_windows(config)
        name = self._emit(HloOp(f"{prefix}{inst.name}", inst.opcode, "compute", tuple(sorted(deps)),
                                cost=cost.scaled(scale) if scale != 1 else cost, stream=stream, repeat=scale,
                                dtype=dtype, family=family, params=params,
                                xla_cycles=int(cycles.group(1)) * scale if cycles else None,
                                xla_windows=windows * scale if windows else None,
                                fusion_kind=inst.attrs.get("kind", "") if inst.opcode == "fusion" else ""))
        return _shaped(inst.shape, frozenset({name}))

    def _collective_fusion(self, comp: Computation, inst: Instruction, fused: FusedCollective, deps: frozenset,
                           prefix: str, scale: int) -> Val:
        """A TPU fusion holding a collective (:mod:`~accelsim.importers.hlo_tpu_fusion`): a
        start issues the collective in the background (its users wait for the done, not
        for it), a continuation is the compute it fuses, a done waits for the start of its
        chain, a collective fusion is its collective."""
        if fused.role == "continue":
            self.counts["async_collective_fusion:continuation"] += 1
            return self._compute(comp, inst, deps, prefix, scale, MAIN)
        if fused.role == "done":
            start = self._chains.pop(fused.chain, None)
            if start is None:
                self.counts["async_collective_fusion:done_without_start"] += 1
                return _shaped(inst.shape, deps)
            name = self._emit(HloOp(f"{prefix}{inst.name}", inst.opcode, "done", start=start))
            return _shaped(inst.shape, deps | {name})
        self.counts[f"{'async_collective' if fused.role == 'start' else 'collective'}_fusion:"
                    f"{fused.kind or COLLECTIVE_OPCODES[fused.collective.opcode]}"] += 1
        value = self.comm.collective(fused.computation, fused.collective, deps, prefix, scale,
                                     is_async=fused.role == "start", kind=fused.kind, name=f"{prefix}{inst.name}")
        if fused.role == "sync":
            return _shaped(inst.shape, _leaf_deps(value) | deps)
        started = _leaf_deps(value) - deps
        if started:
            self._chains[fused.chain] = next(iter(started))
        return _shaped(inst.shape, deps)

    def _async_start(self, inst: Instruction, operands: list[Val], prefix: str, scale: int) -> Val:
        """Generic ``async-start``: the wrapped computation runs in the background."""
        before = len(self.ops)
        result = self.run(self._called(inst, 0), operands, f"{prefix}{inst.name}/", scale)
        return self._started(before, operands, result)

    def _short_async(self, comp: Computation, inst: Instruction, wrapped: tuple[Instruction, str],
                     env: dict[str, Val], args: list[Val], operands: list[Val], prefix: str, scale: int) -> Val:
        """``X-start`` / ``X-update`` / ``X-done``: an async op wrapping ``X``, as XLA prints it
        (:func:`~accelsim.importers.hlo_cost.async_wrapped`)."""
        instruction, phase = wrapped
        if phase == "update":
            return operands[0] if operands else frozenset()
        if phase == "done":
            return self._done(inst, operands, prefix)
        before = len(self.ops)
        result = self._instruction(comp, instruction, env, args, prefix, scale)
        return self._started(before, operands, result)

    def _sparsecore(self, comp: Computation, inst: Instruction, operands: list[Val], deps: frozenset, prefix: str,
                    scale: int) -> Val | None:
        """A collective offloaded to the SparseCores (:mod:`~accelsim.importers.hlo_sparsecore`):
        the start moves nothing, the update issues the collective on its inputs in the
        background, the done waits for it. None for any other custom call."""
        if inst.opcode == "custom-call-start":
            called = offloaded_collective(self.module, inst, COLLECTIVE_OPCODES)
            if called is None:
                return None
            self._offloads[f"{prefix}{inst.name}"] = called
            return _shaped(inst.shape, deps)
        if inst.opcode == "custom-call-done":
            offloaded = bool(inst.operands) and f"{prefix}{inst.operands[0]}" in self._offloads
            return self._done(inst, operands, prefix) if offloaded else None
        called = self._offloads.get(f"{prefix}{inst.operands[0]}") if inst.operands else None
        if called is None:
            return None
        self._offloads[f"{prefix}{inst.name}"] = called
        self.counts["sparsecore_offload:" + "+".join(sorted({COLLECTIVE_OPCODES[i.opcode] for i in called.instructions
                                                              if i.opcode in COLLECTIVE_OPCODES}))] += 1
        before = len(self.ops)
        result = self.run(called, operands[1:], f"{prefix}{inst.name}/", scale)
        return self._started(before, operands, result)

    def _started(self, before: int, operands: list[Val], result: Val) -> Val:
        """Moves the ops emitted since ``before`` to the background (compute on its own
        stream, collectives async); the value of an async start."""
        for i in range(before, len(self.ops)):
            op = self.ops[i]
            if op.kind == "compute":
                self.ops[i] = replace(op, stream=ASYNC_COMPUTE)
            elif op.kind != "done":
                self.ops[i] = replace(op, is_async=True)
                self._async_names.add(op.name)
        started = frozenset(op.name for op in self.ops[before:])
        return (tuple(operands), _mark(result, started), frozenset())

    def _done(self, inst: Instruction, operands: list[Val], prefix: str) -> Val:
        if not operands:
            raise InputError(f"{inst.opcode} {shown(inst.name)} names no operand; expected the start it waits for",
                             source=self.module.source, line=inst.line, field=inst.opcode)
        started = _leaf_deps(operands[0])
        async_ops = [name for name in sorted(started) if self._is_async(name)]
        if not async_ops:
            target = operands[0][1] if isinstance(operands[0], tuple) and len(operands[0]) > 1 else operands[0]
            return _shaped(inst.shape, _leaf_deps(target))
        names = frozenset(self._emit(HloOp(f"{prefix}{inst.name}" + (f"/{i}" if i else ""), inst.opcode, "done",
                                           start=start)) for i, start in enumerate(async_ops))
        return _shaped(inst.shape, names)

    def _is_async(self, name: str) -> bool:
        return name in self._async_names

    # ------------------------------------------------------------ control flow

    def _while(self, comp: Computation, inst: Instruction, operands: list[Val], prefix: str, scale: int) -> Val:
        """The body once per trip; a condition that does work (:meth:`_Estimates.condition_works`)
        before every trip and after the last, each trip waiting for it."""
        body = self.module.computations[_attr_name(inst, "body", self.module.source)]
        condition = self.module.computations[_attr_name(inst, "condition", self.module.source)]
        working = self.estimates.condition_works(condition.name)
        if working:
            self.counts["while_conditions_run"] += 1
        trips = self.estimates.trips(comp, inst)
        if trips is None:
            self.counts["while_unknown_trip_count_run_once"] += 1
            trips = 1
        state = operands[0] if operands else ()

        def check(state: Val, label: str, times: int) -> Val:
            if not working:
                return state
            predicate = self.run(condition, [state], f"{prefix}{inst.name}.{label}.cond/", scale * times)
            return _mark(state, _leaf_deps(predicate))

        size = self.estimates.static_size
        per_trip = size(body.name) + (size(condition.name) if working else 0)
        if len(self.ops) + per_trip * trips <= self.max_ops or trips <= 1:
            for trip in range(trips):
                state = check(state, str(trip), 1)
                state = self.run(body, [state], f"{prefix}{inst.name}.{trip}/", scale)
            return check(state, str(trips), 1)
        self.counts["folded_while_loops"] += 1
        state = check(state, f"x{trips + 1}", trips + 1)
        return self.run(body, [state], f"{prefix}{inst.name}.x{trips}/", scale * trips)

    def _conditional(self, inst: Instruction, operands: list[Val], prefix: str, scale: int) -> Val:
        branches = inst.called()
        chosen = max(range(len(branches)), key=lambda i: (self.estimates.weight(branches[i]), -i))
        if len(branches) > 1:
            self.counts["conditionals_costliest_branch"] += 1
        predicate = _leaf_deps(operands[0]) if operands else frozenset()
        arg = operands[chosen + 1] if chosen + 1 < len(operands) else frozenset()
        arg = _mark(arg, predicate) if predicate else arg
        return self.run(self.module.computations[branches[chosen]], [arg],
                        f"{prefix}{inst.name}.{branches[chosen]}/", scale)


class _Communication:
    """Collectives, sends and receives as ops: their bytes, device groups or pairs; a
    ``recv`` depends on the ``send`` of its channel."""

    def __init__(self, module: Module, costs: CostModel, counts: Counter[str], emit: Callable[[HloOp], str]) -> None:
        self.module = module
        self.costs = costs
        self.counts = counts
        self._emit = emit
        self._channel_sends: dict[str, str] = {}

    def collective(self, comp: Computation, inst: Instruction, deps: frozenset, prefix: str, scale: int,
                   is_async: bool, kind: str | None = None, name: str | None = None) -> Val:
        """``kind`` and ``name`` when they are not the instruction's own (a collective a
        TPU fusion holds: named after the fusion)."""
        kind = kind or COLLECTIVE_OPCODES[inst.opcode]
        if inst.opcode == "ragged-all-to-all":
            self.counts["ragged_all_to_all_as_all_to_all"] += 1
        size = comm_bytes(self.costs, comp, inst, kind)
        mode = group_mode(inst.opcode, inst.attrs)
        module = self.module
        try:
            if kind == "collective-permute":
                pairs = device_pairs(parse_pairs(inst.attrs.get("source_target_pairs", "{}")), mode,
                                     module.replica_count, module.num_partitions)
                pairs = tuple(p for p in pairs if p[0] != p[1])
                groups: Groups = ()
                if not pairs:
                    self.counts["collective_permute_without_pairs"] += 1
                    return _shaped(inst.shape, deps)
            else:
                pairs = ()
                groups = device_groups(parse_groups(inst.attrs.get("replica_groups", "{}")), mode,
                                       module.replica_count, module.num_partitions)
        except GroupSyntaxError as exc:
            raise InputError(str(exc), source=module.source, line=inst.line, field="replica_groups") from None
        cost = self.costs.flops(comp, inst)
        name = self._emit(HloOp(name or f"{prefix}{inst.name}", inst.opcode, kind, tuple(sorted(deps)), cost=cost,
                                comm_bytes=size * scale, groups=groups, pairs=pairs, is_async=is_async,
                                repeat=scale, dtype=_main_dtype(inst.shape)))
        if scale != 1:
            self.counts["folded_collectives"] += 1
        return _shaped(inst.shape, frozenset({name}))

    def send(self, comp: Computation, inst: Instruction, deps: frozenset, prefix: str, scale: int) -> Val:
        """``send``: a collective-permute over its source-target pairs, async until ``send-done``."""
        if inst.attrs.get("is_host_transfer") == "true":
            self.counts["host_transfers_skipped"] += 1
            return _shaped(inst.shape, deps)
        frontend = inst.attrs.get("frontend_attributes", "")
        m = re.search(r'_xla_send_recv_source_target_pairs="?(\{[\d{},\s]*\})', frontend)
        if not m:
            self.counts["send_without_pairs"] += 1
            return _shaped(inst.shape, deps)
        module = self.module
        pairs = tuple(p for p in device_pairs(parse_pairs(m.group(1)), group_mode("send", inst.attrs),
                                              module.replica_count, module.num_partitions) if p[0] != p[1])
        size = self.costs.operand_shapes(comp, inst)[0].size_bytes
        name = self._emit(HloOp(f"{prefix}{inst.name}", "send", "collective-permute", tuple(sorted(deps)),
                                comm_bytes=size * scale, pairs=pairs, repeat=scale,
                                dtype=_main_dtype(inst.shape)))
        self._channel_sends[inst.attrs.get("channel_id", "")] = name
        return _shaped(inst.shape, frozenset({name}))

    def recv(self, inst: Instruction, operands: list[Val], deps: frozenset) -> Val:
        if inst.opcode == "recv-done":
            source = operands[0] if operands else frozenset()
            channel_send = _leaf_deps(source)
            return _shaped(inst.shape, channel_send | deps)
        send = self._channel_sends.get(inst.attrs.get("channel_id", ""))
        if send is None:
            self.counts["recv_before_its_send"] += 1
            return _shaped(inst.shape, deps)
        return _shaped(inst.shape, deps | {send})


class _Estimates:
    """What one pass over a computation would cost, before emitting it: loop trip counts,
    whether a loop condition does work, ops emitted (for the unrolling budget), and a
    conditional branch's weight (its time on the target system with ``rates``)."""

    def __init__(self, module: Module, costs: CostModel, rates: BranchRates | None) -> None:
        self.module = module
        self.costs = costs
        self.rates = rates
        self._seconds: dict[str, float] = {}
        self._working: dict[str, bool] = {}
        self._sizes: dict[str, float] = {}
        self._looped: dict[str, float] = {}
        self._trip_counts: dict[tuple[str, str], int | None] = {}

    def trips(self, comp: Computation, inst: Instruction) -> int | None:
        key = (comp.name, inst.name)
        if key not in self._trip_counts:
            self._trip_counts[key] = trip_count(self.module, comp, inst)
        return self._trip_counts[key]

    def condition_works(self, name: str) -> bool:
        """Does a loop condition do work worth an op: a collective, or compute on arrays?
        The usual condition, a loop counter compared with a bound (a scalar compare, maybe
        fused), costs nothing here, as it costs next to nothing on a scalar unit."""
        if name not in self._working:
            self._working[name] = False  # guards against recursion in malformed modules
            self._working[name] = self._one_pass(name, self._works, {}) > 0
        return self._working[name]

    def _works(self, comp: Computation, inst: Instruction) -> int:
        if inst.opcode in COLLECTIVE_OPCODES or inst.opcode == "send":
            return 1
        if not _emits_op(comp, inst):
            return 0
        shapes = [*self.costs.operand_shapes(comp, inst), *inst.shape.leaves()]
        return int(any(shape.num_elements > 1 for shape in shapes))

    def weight(self, name: str) -> tuple[float, int]:
        """A branch's weight: its estimated time on the target system (:class:`BranchRates`:
        compute, HBM and communication, loops per trip), its op count breaking ties;
        without rates, its flops plus its op count."""
        if self.rates is None:
            return self.looped_flops(name) + self.static_size(name), 0
        return self._one_pass(name, self._seconds_of, self._seconds), self.static_size(name)

    def _seconds_of(self, comp: Computation, inst: Instruction) -> float:
        rates = self.rates
        op = inst.opcode
        if op in COLLECTIVE_OPCODES:
            return comm_bytes(self.costs, comp, inst, COLLECTIVE_OPCODES[op]) * rates.comm_byte_s
        if op == "send":
            return sum(shape.size_bytes for shape in self.costs.operand_shapes(comp, inst)[:1]) * rates.comm_byte_s
        if not _emits_op(comp, inst) or op in ASYNC_DONES:
            return 0.0
        cost = self.costs.cost(comp, inst)
        return max((cost.matrix_flops + cost.vector_flops) * rates.flop_s, cost.bytes * rates.byte_s)

    def looped_flops(self, name: str) -> float:
        """Flops of one pass over computation ``name`` (:meth:`_one_pass`): what a branch
        weighs (:meth:`~accelsim.importers.hlo_cost.CostModel.computation_flops` sees a
        ``while`` as free)."""
        return self._one_pass(name, self._flops_of, self._looped)

    def static_size(self, name: str) -> int:
        """Ops one pass over computation ``name`` emits (:meth:`_one_pass`)."""
        return int(self._one_pass(name, _emits_op, self._sizes))

    def _flops_of(self, comp: Computation, inst: Instruction) -> float:
        cost = self.costs.flops(comp, inst)
        return cost.matrix_flops + cost.vector_flops

    def _one_pass(self, name: str, leaf, cache: dict[str, float]) -> float:
        """``leaf(computation, instruction)`` summed over one pass of computation ``name``:
        a loop's body once per trip (known trip counts, else once) and a working condition
        once more than that, the larger branch of a conditional, called computations in full."""
        if name in cache:
            return cache[name]
        cache[name] = 0  # guards against recursion in malformed modules
        total = 0
        comp = self.module.computations[name]
        for inst in comp.instructions:
            if inst.opcode == "while":
                trips = self.trips(comp, inst)
                trips = 1 if trips is None else trips
                body = _attr_name(inst, "body", self.module.source)
                condition = _attr_name(inst, "condition", self.module.source)
                total += trips * self._one_pass(body, leaf, cache)
                if self.condition_works(condition):
                    total += (trips + 1) * self._one_pass(condition, leaf, cache)
            elif inst.opcode in ("call", "async-start"):
                total += sum(self._one_pass(c, leaf, cache) for c in inst.called())
            elif inst.opcode == "conditional":
                total += max((self._one_pass(c, leaf, cache) for c in inst.called()), default=0)
            else:
                total += leaf(comp, inst)
        cache[name] = total
        return total


def comm_bytes(costs: CostModel, comp: Computation, inst: Instruction, kind: str) -> float:
    """Bytes a collective of ``kind`` sends per device."""
    operands = costs.operand_shapes(comp, inst)
    if kind == "all-gather":
        out = inst.shape
        if inst.opcode == "all-gather-start" and out.is_tuple and len(out.elements) == 2:
            out = out.elements[1]
        return out.size_bytes
    if inst.opcode == "ragged-all-to-all" or (kind == "collective-permute" and "slice_sizes" in inst.attrs):
        return operands[0].size_bytes if operands else 0.0  # the rest: output buffer, offsets, sizes
    return float(sum(s.size_bytes for s in operands))  # a combined collective sends every buffer


def _emits_op(_comp: Computation, inst: Instruction) -> int:
    if inst.opcode == "custom-call" and _target(inst) in NO_WORK_CUSTOM_CALLS:
        return 0
    return int(inst.opcode not in FREE and inst.opcode not in PASS_THROUGH)


def _target(inst: Instruction) -> str:
    return inst.attrs.get("custom_call_target", "").strip('"')


def _mark(val: Val, extra: frozenset) -> Val:
    if isinstance(val, frozenset):
        return val | extra
    return tuple(_mark(v, extra) for v in val)


def _attr_name(inst: Instruction, key: str, source: str) -> str:
    """The computation an attribute (``body=``, ``condition=``) names."""
    if key not in inst.attrs:
        raise InputError(f"{inst.opcode} {shown(inst.name)} has no {key}=", source=source, line=inst.line, field=key)
    return inst.attrs[key].strip().lstrip("%")


def _main_dtype(shape: Shape) -> str:
    leaves = shape.leaves()
    if not leaves:
        return "f32"
    return max(leaves, key=lambda s: s.size_bytes).dtype


# ------------------------------------------------------------------ while trip counts


def trip_count(module: Module, comp: Computation, inst: Instruction) -> int | None:
    """From ``backend_config`` ``known_trip_count``, else the induction-variable pattern
    ``compare(get-tuple-element(param, i), constant(N)), direction=LT`` with the start
    value a constant in the init tuple and a ``+ constant`` step in the body."""
    config = inst.attrs.get("backend_config", "")
    m = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?([^",}\s]*)"?', config)
    if m:
        if not m.group(1).isdigit():
            raise InputError(f"known_trip_count: expected a whole number of trips, got {shown(m.group(1))}",
                             source=module.source, line=inst.line, field="backend_config")
        return int(m.group(1))
    return _pattern_trip_count(module, comp, inst)


def _pattern_trip_count(module: Module, comp: Computation, inst: Instruction) -> int | None:
    cond = module.computations.get(_attr_name(inst, "condition", module.source))
    body = module.computations.get(_attr_name(inst, "body", module.source))
    if cond is None or body is None:
        return None
    found = _compare_of(module, cond)
    if found is None:
        return None
    index, bound, direction = found
    start = _init_constant(comp, inst, index)
    step = _body_step(module, body, index)
    if start is None or step is None or step == 0:
        return None
    if direction == "LT" and step > 0:
        return max(0, -(-(bound - start) // step))
    if direction == "LE" and step > 0:
        return max(0, (bound - start) // step + 1)
    if direction == "GT" and step < 0:
        return max(0, -(-(start - bound) // -step))
    if direction == "GE" and step < 0:
        return max(0, (start - bound) // -step + 1)
    return None


def _scalar_constant(inst: Instruction) -> int | None:
    if inst.opcode != "constant" or inst.shape.dims:
        return None
    try:
        return int(inst.literal.strip())
    except ValueError:
        return None


def _compare_of(module: Module, cond: Computation) -> tuple[int, int, str] | None:
    """(tuple index of the induction variable, bound, direction) of the loop condition."""
    comp, root = cond, cond.root
    names = comp.by_name()
    args: list[Instruction] = [names[o] for o in root.operands]
    if root.opcode == "fusion":  # XLA:CPU and GPU wrap the compare in a fusion
        fused = module.computations[root.called()[0]]
        inner = fused.root
        if inner.opcode != "compare":
            return None
        fused_names = fused.by_name()
        order = [int(fused_names[o].attrs.get("parameter_number", "-1")) for o in inner.operands]
        if min(order, default=-1) < 0 or max(order) >= len(args):
            return None
        args = [args[i] for i in order]
        root = inner
    if root.opcode != "compare" or len(args) != 2:
        return None
    direction = re.sub(r"\W", "", root.attrs.get("direction", ""))
    lhs, rhs = args
    if lhs.opcode == "get-tuple-element" and (bound := _scalar_constant(rhs)) is not None:
        return int(lhs.attrs.get("index", "-1")), bound, direction
    if rhs.opcode == "get-tuple-element" and (bound := _scalar_constant(lhs)) is not None:
        flipped = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}.get(direction, direction)
        return int(rhs.attrs.get("index", "-1")), bound, flipped
    return None


def _init_constant(comp: Computation, inst: Instruction, index: int) -> int | None:
    """The constant the loop's ``index`` element starts at (through copies), if any."""
    names = comp.by_name()
    init = names.get(inst.operands[0]) if inst.operands else None
    if init is None or init.opcode != "tuple" or index >= len(init.operands):
        return None
    return _scalar_constant(_through_copies(names, names[init.operands[index]]))


def _through_copies(names: dict[str, Instruction], inst: Instruction) -> Instruction:
    """What ``inst`` copies, through any copies and bitcasts (XLA:CPU copies a loop
    counter before adding to it: ``add(copy(get-tuple-element), 1)``)."""
    while inst.opcode in ("copy", "bitcast") and inst.operands:
        inst = names[inst.operands[0]]
    return inst


def _body_step(module: Module, body: Computation, index: int) -> int | None:
    names = body.by_name()
    root = body.root
    if root.opcode != "tuple" or index >= len(root.operands):
        return None
    update = _through_copies(names, names[root.operands[index]])
    args = [_through_copies(names, names[o]) for o in update.operands]
    opcode = update.opcode
    if opcode == "fusion":
        fused = module.computations[update.called()[0]]
        inner = fused.root
        fused_names = fused.by_name()
        inner_args = []
        for o in inner.operands:
            arg = _through_copies(fused_names, fused_names[o])
            if arg.opcode == "parameter":
                arg = args[int(arg.attrs["parameter_number"])]
            inner_args.append(arg)
        opcode, args = inner.opcode, inner_args
    if opcode not in ("add", "subtract") or len(args) != 2:
        return None
    steps = [c for c in (_scalar_constant(a) for a in args) if c is not None]
    counters = [a for a in args if a.opcode == "get-tuple-element" and a.attrs.get("index") == str(index)]
    if len(steps) != 1 or len(counters) != 1:
        return None
    return steps[0] if opcode == "add" else -steps[0]


# ------------------------------------------------------------------ entry points


def lower_module(module: Module, *, max_ops: int = DEFAULT_MAX_OPS, rates: BranchRates | None = None) -> HloProgram:
    """The module's entry computation as a flat op list (the intermediate form);
    ``rates`` weigh conditional branches by time (:meth:`_Estimates.weight`)."""
    lowering = _Lowering(module, max_ops, rates)
    entry = module.entry_computation
    lowering.run(entry, [], "", 1)
    counts = Counter(lowering.counts)
    for opcode, n in lowering.costs.unknown_opcodes.items():
        counts[f"unknown_opcode:{opcode}"] += n
    for target, n in lowering.costs.unknown_custom_calls.items():
        counts[f"unknown_custom_call:{target}"] += n
    for target, n in lowering.costs.estimated_custom_calls.items():
        counts[f"cost_estimate:{target}"] += n
    for phase, n in lowering.costs.splash_attention_calls.items():
        counts[f"splash_attention:{phase}"] += n
    for phase, n in lowering.costs.dense_splash_attention_calls.items():
        counts[f"splash_attention_dense:{phase}"] += n
    for target, n in lowering.costs.assumed_contractions.items():
        counts[f"contraction_assumed:{target}"] += n
    if not module.is_scheduled:
        counts["module_not_scheduled"] += 1
    return HloProgram(module.name, module.num_devices, module.replica_count, module.num_partitions,
                      tuple(lowering.ops), dict(sorted(counts.items())))


def read_hlo(path: str | Path) -> Module:
    """An HLO text file, or a gzip-compressed one (``.gz``: XLA dumps of large programs)."""
    if str(path).endswith(".gz"):
        return parse_module(_gunzipped_text(path), source=str(path))
    return parse_module(read_text_file(path, "HLO text"), source=str(path))


def _gunzipped_text(path: str | Path) -> str:
    """The text of a gzip file, refused past :data:`~accelsim.errors.MAX_INPUT_BYTES`
    uncompressed (before all of it is inflated) or when it is not gzip or not UTF-8."""
    try:
        with gzip.open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read HLO text: not a gzip file ({str(exc)[:80]})", source=str(path)) from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"cannot read HLO text: larger than {MAX_INPUT_BYTES // 2**30} GiB uncompressed",
                         source=str(path))
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read HLO text: not UTF-8 text once uncompressed (byte {exc.start})",
                         source=str(path)) from None


def _trace_dtype(hlo_dtype: str) -> str:
    if hlo_dtype.startswith("f8"):
        return "fp8"
    return DTYPES.get(hlo_dtype, "fp32")


def supported_dtype(dtype: str, available: Collection[str]) -> str:
    """``dtype`` if the unit has a rate for it, else the nearest wider type it has."""
    wanted = dtype
    while dtype not in available and dtype in WIDER:
        dtype = WIDER[dtype]
    return dtype if dtype in available else wanted


def to_system_trace(program: HloProgram, *, source: str = "", system: str | None = None,
                    unit_dtypes: Mapping[str, Collection[str]] | None = None) -> SystemTrace:
    """The intermediate program as a system trace: one program for all the module's devices.

    ``unit_dtypes`` (``{"matrix": {...}, "vector": {...}}``, the chip's rate tables) moves
    a compute op whose type the unit has no rate for to the nearest wider one (counted)."""
    counts = Counter(program.counts)
    ops = []
    for op in program.ops:
        common = {"name": op.name, "kind": op.kind, "stream": op.stream, "deps": list(op.deps),
                  "ctrl_deps": list(op.ctrl_deps)}
        if op.kind == "compute" and op.family is not None:
            ops.append(Op(**common, family=op.family, params={**dict(op.params), "config": "auto"}))
        elif op.kind == "compute":
            unit = "matrix" if op.cost.matrix_flops > 0 else "vector"
            dtype = _trace_dtype(op.dtype)
            if unit_dtypes is not None and (op.cost.matrix_flops or op.cost.vector_flops):
                chosen = supported_dtype(dtype, unit_dtypes[unit])
                if chosen != dtype:
                    counts[f"dtype_fallback:{unit}:{dtype}->{chosen}"] += 1
                    dtype = chosen
            ops.append(Op(**common, flops=op.cost.matrix_flops if unit == "matrix" else op.cost.vector_flops,
                          bytes=op.cost.bytes, unit=unit, dtype=dtype))
        elif op.kind == "done":
            ops.append(Op(**common, start=op.start))
        elif op.kind == "collective-permute":
            ops.append(Op(**common, bytes=op.comm_bytes, pairs=[list(p) for p in op.pairs], is_async=op.is_async))
        else:
            ops.append(Op(**common, bytes=op.comm_bytes, groups=[list(g) for g in op.groups], is_async=op.is_async))
    metadata = {
        "generator": "accelsim import hlo",
        "source": source,
        "hlo_module": program.module_name,
        "replica_count": program.replica_count,
        "num_partitions": program.num_partitions,
        "importer_counts": dict(sorted(counts.items())),
        "per_device_totals": summary(program),
    }
    estimates = xla_estimates(program)
    if estimates:
        metadata["xla_estimates"] = estimates
    if system:
        metadata["system"] = system
    devices = [f"0-{program.num_devices - 1}"] if program.num_devices > 1 else [0]
    return SystemTrace(schema_version=1, name=program.module_name, num_devices=program.num_devices,
                       programs=[Program(name=program.module_name, devices=devices, ops=ops)], metadata=metadata)


def xla_windows(backend_config: str) -> int | None:
    """The windows of an XLA:TPU op: the product of ``window_config.iteration_bounds`` in
    its backend config (bounds printed as numbers or quoted numbers); ``None`` without them
    or with a bound that is not a whole number above 0, or a product past
    :data:`~accelsim.importers.hlo_estimates.MAX_XLA_COUNT` (XLA's bounds are int64s)."""
    found = _ITERATION_BOUNDS.search(backend_config)
    if found is None:
        return None
    bounds = [b.strip().strip('"') for b in found.group(1).split(",") if b.strip()]
    if not bounds or not all(b.isdigit() and len(b) <= 19 and int(b) > 0 for b in bounds):
        return None
    windows = math.prod(int(b) for b in bounds)
    return windows if windows <= MAX_XLA_COUNT else None


def xla_estimates(program: HloProgram) -> dict[str, dict]:
    """XLA's estimate of every compute op that has one, by op name: ``cycles`` (its
    ``estimated_cycles``, times the trips of a folded loop), the HLO ``kind`` (the fusion
    kind, else the opcode) and, where XLA tiled the op, its ``windows`` (times the trips),
    for :mod:`accelsim.importers.hlo_estimates`."""
    return {op.name: {"cycles": op.xla_cycles, "kind": op.fusion_kind or op.opcode,
                      **({"windows": op.xla_windows} if op.xla_windows else {})}
            for op in program.ops if op.kind == "compute" and op.xla_cycles is not None}


def summary(program: HloProgram) -> dict[str, float]:
    """Per-device totals: flops by unit, compute bytes (HBM; and on chip, in host memory,
    tile padding within the HBM bytes), communication bytes by kind, op counts."""
    out: Counter[str] = Counter()
    for op in program.ops:
        out["ops"] += 1
        if op.kind == "compute":
            out["matrix_flops"] += op.cost.matrix_flops
            out["vector_flops"] += op.cost.vector_flops
            out["compute_bytes"] += op.cost.bytes
            for key, value in (("on_chip_bytes", op.cost.on_chip_bytes), ("host_bytes", op.cost.host_bytes),
                               ("padding_bytes", op.cost.padding_bytes), ("xla_estimated_cycles", op.xla_cycles)):
                if value:
                    out[key] += value
        elif op.kind != "done":
            out[f"{op.kind}_bytes"] += op.comm_bytes
            out[f"{op.kind}_count"] += 1
    return dict(sorted(out.items()))


def system_device_count(arch) -> int:
    """Devices of a chip (1) or system config."""
    for attr in ("num_chips", "gpus"):
        if hasattr(arch, attr):
            return int(getattr(arch, attr))
    return 1


def import_hlo(path: str | Path, *, system_devices: int | None = None, system: str | None = None,
               unit_dtypes: Mapping[str, Collection[str]] | None = None,
               max_ops: int = DEFAULT_MAX_OPS, rates: BranchRates | None = None) -> SystemTrace:
    """Read, lower and convert one HLO file; checks it fits ``system_devices``."""
    try:
        return _import_hlo(path, system_devices, system, unit_dtypes, max_ops, rates)
    except RecursionError:  # a shape or call chain nested deeper than the readers walk
        raise InputError("nested too deeply to import (a tuple shape or a chain of calls thousands deep)",
                         source=str(path)) from None


def _import_hlo(path, system_devices, system, unit_dtypes, max_ops, rates) -> SystemTrace:
    module = read_hlo(path)
    if system_devices is not None and module.num_devices > system_devices:
        raise InputError(
            f"the HLO module runs on {module.num_devices} devices (replica_count={module.replica_count}, "
            f"num_partitions={module.num_partitions}) but system {shown(system)} has {system_devices}",
            source=str(path))
    program = lower_module(module, max_ops=max_ops, rates=rates)
    return to_system_trace(program, source=Path(path).name, system=system, unit_dtypes=unit_dtypes)


def describe_counts(counts: dict[str, int]) -> str:
    """One line for the CLI: what was estimated or skipped."""
    return ", ".join(f"{k} x{v}" for k, v in counts.items()) or "none"


# ------------------------------------------------------------------ accelsim import hlo


MAX_UNROLLED_OPS = 1_000_000
"""The most ops ``--max-ops`` may unroll loops into: a trace of a million ops replays in
minutes; past that, loops are folded into scaled ops."""


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="HLO module text")
    p.add_argument("--system", required=True, help="system the trace is for: the module's devices must fit it")
    p.add_argument("--max-ops", type=int, default=None, metavar="N",
                   help="unroll while loops up to N ops in all, fold them into scaled ops beyond (default: 20000)")


def _inputs(args: argparse.Namespace) -> list[str]:
    if args.max_ops is not None and not 1 <= args.max_ops <= MAX_UNROLLED_OPS:
        raise InputError(f"expected an op count from 1 to {MAX_UNROLLED_OPS:,}, got {args.max_ops}", field="max_ops")
    return [args.file]


def _convert(args: argparse.Namespace) -> Imported:
    system = load_arch(args.system, args.overrides)
    chip = chip_of(system)
    rates = {"matrix": set(chip.matrix.flops_per_cycle_per_core), "vector": set(chip.vector.flops_per_cycle_per_core)}
    table = chip.matrix.flops_per_cycle_per_core
    peak = chip.matrix_flops_per_s("bf16" if "bf16" in table else max(table, key=table.get))
    links = chip.link_bandwidth_bytes_per_s or chip.hbm.bandwidth_bytes_per_s  # a chip without scale-up links
    branch_rates = BranchRates(flop_s=1 / peak, byte_s=1 / chip.hbm.bandwidth_bytes_per_s, comm_byte_s=1 / links)
    trace = import_hlo(args.file, system_devices=build_topology(system).ranks, system=args.system,
                       unit_dtypes=rates, max_ops=args.max_ops or DEFAULT_MAX_OPS, rates=branch_rates)
    return Imported(trace, (f"estimated or skipped: {describe_counts(trace.metadata['importer_counts'])}",))


IMPORTER = Importer(
    name="hlo", help="scheduled XLA HLO text (jit(f).lower(...).compile().as_text() or an HLO dump)",
    add_arguments=_add_arguments, inputs=_inputs, convert=_convert, configs=lambda args: config_files(args.system),
    what_if=True, options_of_fields={"max_ops": "--max-ops"},
)
