"""Flops and bytes of HLO instructions, per device (HLO after SPMD partitioning is per device).

Rules (see ``docs/import-hlo.md``):

* ``dot``: ``2 * output elements * product of the lhs contracting dimensions``
  (batch dimensions are part of the output); matrix flops. ``scaled-dot`` likewise;
  ``ragged-dot`` likewise, shared among the groups when ragged in a contracting dimension.
* ``convolution``: ``2 * output elements * kernel spatial size * kernel input
  features`` (the kernel's input-feature dimension is already per feature group),
  counting only window positions on real input elements (:mod:`hlo_conv`).
* cuBLAS / cuBLASLt GEMM custom calls: as ``dot``, with the dimension numbers of their
  ``backend_config`` (without them, the lhs minor dimension is the contraction).
* elementwise arithmetic: one vector flop per output element; ``reduce`` one per input
  element; ``reduce-window`` one per output element and window element; data movement
  (copy, transpose, broadcast, convert, slices, gathers, ...) none.
* fusions: the flops of the ops inside; bytes at the fusion boundary: every operand
  read once and the output written once, except that an operand only sliced inside the
  fusion counts the slices, and an in-place ``dynamic-update-slice`` root writes only
  the update.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, replace

from accelsim.families.attention import useful_flops
from accelsim.importers.hlo_conv import conv_flops
from accelsim.importers.hlo_fmha import fmha_params
from accelsim.importers.hlo_text import (
    HBM_SPACE,
    HOST_SPACE,
    Computation,
    Instruction,
    Module,
    Shape,
    strip_braces,
)
from accelsim.importers.hlo_splash import block_mask_operand, splash_attention
from accelsim.importers.hlo_tpu_kernel import KernelEstimate, kernel_estimate
from accelsim.importers.hlo_values import ConstantTracer, integer_values

ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "compare", "complex", "cosine", "divide",
    "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite", "log", "log-plus-one",
    "logistic", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt", "power", "real",
    "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt", "select",
    "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert",
    "subtract", "tan", "tanh", "xor",
})
MOVEMENT = frozenset({
    "bitcast", "bitcast-convert", "broadcast", "concatenate", "convert", "copy", "dynamic-reshape",
    "dynamic-slice", "dynamic-update-slice", "gather", "iota", "pad", "reshape", "reverse", "slice",
    "transpose", "get-dimension-size", "set-dimension-size", "rng", "rng-bit-generator",
    "rng-get-and-update-state", "copy-start", "copy-done",
})
FREE = frozenset({
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "add-dependency",
    "opt-barrier", "partition-id", "replica-id", "domain", "send-done", "recv-done",
})
"""No work of their own: not emitted as ops, they only pass dependencies through."""
REDUCING = frozenset({"reduce", "reduce-window", "scatter", "select-and-scatter", "sort", "map",
                      "all-reduce", "reduce-scatter", "fft"})
SLICING = frozenset({"slice", "dynamic-slice", "gather"})
FUSED_COLLECTIVES = frozenset({"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute",
                               "ragged-all-to-all", "collective-broadcast"})
"""Collectives a TPU fusion may hold (:mod:`accelsim.importers.hlo_tpu_fusion`): their
buffers are communication, not the fusion's compute."""
KNOWN = ELEMENTWISE | MOVEMENT | FREE | REDUCING | frozenset({
    "dot", "convolution", "fusion", "custom-call", "call", "while", "conditional", "async-start", "async-update",
    "async-done", "all-gather", "all-to-all", "ragged-all-to-all", "collective-permute", "collective-broadcast",
    "all-reduce-start", "all-reduce-done", "all-gather-start", "all-gather-done", "collective-permute-start",
    "collective-permute-done", "send", "recv", "infeed", "outfeed", "scaled-dot", "ragged-dot", "composite",
})
ASYNC_PHASES = ("start", "update", "done")
NO_WORK_CUSTOM_CALLS = frozenset({"ConcatBitcast", "AllocateBuffer", "AssumeGatherIndicesInBound"})
"""XLA:TPU custom calls that move no data: adjacent buffers seen as one, an allocation,
a promise about gather indices. At top level they pass dependencies through (counted)."""


def async_wrapped(inst: Instruction) -> tuple[Instruction, str] | None:
    """The instruction an async op in XLA's short form wraps, and the phase.

    XLA prints an ``async-start`` / ``async-update`` / ``async-done`` that wraps a single
    instruction ``X`` as ``X-start`` / ``X-update`` / ``X-done`` with ``X``'s operands and
    attributes (GPU HLO writes its async reduce-scatters and all-to-alls this way:
    ``reduce-scatter-start``, ``all-to-all-start``). The start's shape is
    ``((operands), result, context...)``; the wrapped instruction gets the result.
    Opcodes that exist on their own (``all-gather-start``, ``copy-start``, ...) are not
    short forms. ``None`` for anything else."""
    for phase in ASYNC_PHASES:
        base = inst.opcode.removesuffix(f"-{phase}")
        if base != inst.opcode and inst.opcode not in KNOWN and base in KNOWN:
            shape = inst.shape
            if phase == "start" and shape.is_tuple and len(shape.elements) > 1:
                shape = shape.elements[1]
            return replace(inst, opcode=base, shape=shape), phase
    return None


GEMM_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8", "__hipblas$gemm",
                "__hipblaslt$matmul")


@dataclass(frozen=True)
class Cost:
    """Per-device work of one instruction: flops by unit and HBM bytes at its boundary."""

    matrix_flops: float = 0.0
    vector_flops: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    matrix_dtype: str = "f32"
    """HLO element type of the matrix operands (the roofline rate to use)."""
    on_chip_bytes: float = 0.0
    """Bytes of arrays in on-chip memory spaces (a TPU's VMEM): not HBM traffic."""
    host_bytes: float = 0.0
    """Bytes of arrays in host memory: not modelled."""
    padding_bytes: float = 0.0
    """The part of the HBM bytes that only pads tiles whole (tiled TPU layouts)."""

    def __add__(self, other: Cost) -> Cost:
        dtype = self.matrix_dtype if self.matrix_flops >= other.matrix_flops else other.matrix_dtype
        return Cost(self.matrix_flops + other.matrix_flops, self.vector_flops + other.vector_flops,
                    self.bytes_read + other.bytes_read, self.bytes_written + other.bytes_written, dtype,
                    self.on_chip_bytes + other.on_chip_bytes, self.host_bytes + other.host_bytes,
                    self.padding_bytes + other.padding_bytes)

    def scaled(self, factor: float) -> Cost:
        return Cost(self.matrix_flops * factor, self.vector_flops * factor, self.bytes_read * factor,
                    self.bytes_written * factor, self.matrix_dtype, self.on_chip_bytes * factor,
                    self.host_bytes * factor, self.padding_bytes * factor)

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written


class CostModel:
    """Prices instructions of one module; counts what it could only estimate."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self._names = {name: comp.by_name() for name, comp in module.computations.items()}
        self._flops_cache: dict[str, Cost] = {}
        self._call_cache: dict[tuple, object] = {}
        self.unknown_opcodes: Counter[str] = Counter()
        self.unknown_custom_calls: Counter[str] = Counter()
        self.estimated_custom_calls: Counter[str] = Counter()
        """Custom calls priced from their author's cost estimate (Pallas TPU kernels)."""
        self.splash_attention_calls: Counter[str] = Counter()
        """Splash attention kernel calls by phase, priced from their shapes (:mod:`hlo_splash`)."""
        self.dense_splash_attention_calls: Counter[str] = Counter()
        """Of those, the calls whose block mask was not known: every block counted."""
        self._constants = ConstantTracer(module)
        self.assumed_contractions: Counter[str] = Counter()
        """GEMM custom calls without dimension numbers we could read (absent, or not
        integers): priced contracting the lhs minor dimension."""

    def operand_shapes(self, comp: Computation, inst: Instruction) -> list[Shape]:
        names = self._names[comp.name]
        return [names[o].shape for o in inst.operands]

    # ---------------------------------------------------------------- flops

    def flops(self, comp: Computation, inst: Instruction) -> Cost:
        """Flops of one instruction (no bytes); fusions and calls include their bodies."""
        op = inst.opcode
        if (wrapped := async_wrapped(inst)) is not None:
            return self.flops(comp, wrapped[0]) if wrapped[1] == "start" else Cost()
        if op in ("dot", "scaled-dot"):  # scaled-dot(lhs, rhs, lhs_scale, rhs_scale): block-scaled (MX) types
            lhs = self.operand_shapes(comp, inst)[0]
            return Cost(matrix_flops=dot_flops(inst.shape, lhs, inst.attrs), matrix_dtype=lhs.dtype)
        if op == "ragged-dot":
            lhs, _, group_sizes = self.operand_shapes(comp, inst)[:3]
            return Cost(matrix_flops=ragged_dot_flops(inst.shape, lhs, group_sizes, inst.attrs),
                        matrix_dtype=lhs.dtype)
        if op == "convolution":
            lhs, rhs = self.operand_shapes(comp, inst)[:2]
            return Cost(matrix_flops=conv_flops(lhs, rhs, inst.shape, inst.attrs), matrix_dtype=lhs.dtype)
        if op == "custom-call":
            return self._custom_call_flops(comp, inst)
        if op in ("fusion", "call", "async-start", "map"):
            body = Cost()
            for called in inst.called():
                body = body + self.computation_flops(called)
            if op == "map":
                body = body.scaled(inst.shape.num_elements)
            return body
        if op in ELEMENTWISE:
            return Cost(vector_flops=float(_array_elements(inst.shape)))
        if op in ("reduce", "all-reduce", "reduce-scatter"):
            return Cost(vector_flops=float(sum(s.num_elements for s in self.operand_shapes(comp, inst))))
        if op == "reduce-window":
            return Cost(vector_flops=float(_array_elements(inst.shape) * _window_size(inst.attrs.get("window", ""))))
        if op in ("scatter", "select-and-scatter"):
            return Cost(vector_flops=float(self.operand_shapes(comp, inst)[-1].num_elements))
        if op == "fft":
            n = self.operand_shapes(comp, inst)[0]
            return Cost(vector_flops=float(fft_flops(n, inst.attrs)))
        if op == "sort":
            n = self.operand_shapes(comp, inst)[0]
            per = n.dims[-1] if n.dims else 1
            return Cost(vector_flops=float(n.num_elements * max(1.0, math.log2(max(per, 1)))))
        if op not in KNOWN:
            self.unknown_opcodes[op] += 1
        return Cost()

    def computation_flops(self, name: str) -> Cost:
        if name not in self._flops_cache:
            comp = self.module.computations[name]
            total = Cost()
            for inst in comp.instructions:
                if inst.opcode not in FUSED_COLLECTIVES:  # communication, not the fusion's compute
                    total = total + self.flops(comp, inst)
            self._flops_cache[name] = total
        return self._flops_cache[name]

    def fmha(self, comp: Computation, inst: Instruction) -> dict | None:
        """A cuDNN fused-attention call's family parameters (:mod:`hlo_fmha`), else ``None``."""
        return self._parsed_call(comp, inst, fmha_params)

    def tpu_kernel_estimate(self, comp: Computation, inst: Instruction) -> KernelEstimate | None:
        """A Pallas TPU kernel call's cost estimate (:mod:`hlo_tpu_kernel`), else ``None``."""
        return self._parsed_call(comp, inst, kernel_estimate)

    def _parsed_call(self, comp: Computation, inst: Instruction, parse):
        """``parse(target, backend_config, operand shapes)`` of a custom call, once per
        instruction and parser (a call's flops, bytes and lowering all ask)."""
        if inst.opcode != "custom-call":
            return None
        key = (parse, comp.name, inst.name)
        if key not in self._call_cache:
            target = inst.attrs.get("custom_call_target", "").strip('"')
            self._call_cache[key] = parse(target, inst.attrs.get("backend_config", ""), self.operand_shapes(comp, inst))
        return self._call_cache[key]

    def _custom_call_flops(self, comp: Computation, inst: Instruction) -> Cost:
        target = inst.attrs.get("custom_call_target", "").strip('"')
        if target in NO_WORK_CUSTOM_CALLS:
            return Cost()
        shapes = self.operand_shapes(comp, inst)
        params = self.fmha(comp, inst)
        if params is not None:  # the family's useful flops: 4 x pairs x head_dim forward, 2.5x that backward
            return Cost(matrix_flops=useful_flops(params), matrix_dtype=params["dtype"])
        estimate = self.tpu_kernel_estimate(comp, inst)
        if estimate is not None:
            self.estimated_custom_calls[target] += 1
            if estimate.remote_bytes:
                self.estimated_custom_calls[f"{target}:remote_bytes_not_modelled"] += 1
            return Cost(matrix_flops=estimate.flops, vector_flops=estimate.transcendentals,
                        matrix_dtype=estimate.dtype)
        splash = splash_attention(inst.name, target, inst.attrs.get("frontend_attributes", ""), shapes, inst.shape,
                                  self._splash_block_mask(comp, inst, target, shapes))
        if splash is not None:  # JAX's splash attention kernel: its matmuls from Q and K, on the blocks it runs
            self.splash_attention_calls[splash.phase] += 1
            if splash.block_share is None:
                self.dense_splash_attention_calls[splash.phase] += 1
            return Cost(matrix_flops=splash.matrix_flops, vector_flops=splash.exponentials,
                        matrix_dtype=splash.dtype)
        if target in GEMM_TARGETS and len(shapes) >= 2:
            out = inst.shape.elements[0] if inst.shape.is_tuple else inst.shape
            dims = _gemm_dimension_numbers(inst.attrs.get("backend_config", ""))
            if dims is None:
                self.assumed_contractions[target] += 1
                dims = {"lhs_contracting_dims": f"{{{len(shapes[0].dims) - 1}}}"}
            return Cost(matrix_flops=dot_flops(out, shapes[0], dims), matrix_dtype=shapes[0].dtype)
        self.unknown_custom_calls[target or "<no target>"] += 1
        return Cost()

    def _splash_block_mask(self, comp: Computation, inst: Instruction, target: str,
                           shapes: list[Shape]) -> list[int] | None:
        """A splash attention call's ``block_mask`` values, when its operand is a constant
        printed whole (:mod:`hlo_values`), else ``None``."""
        number = block_mask_operand(inst.name, target, shapes)
        if number is None:
            return None
        constant = self._constants.constant(comp, inst.operands[number])
        return integer_values(constant) if constant is not None else None

    # ---------------------------------------------------------------- bytes

    def boundary_parts(self, comp: Computation, inst: Instruction) -> tuple[list[Part], list[Part]]:
        """What a top-level instruction reads and writes at its boundary, as (shape, share
        of it touched): operands in, output out; a fusion's operands only sliced count the
        slices, an in-place update only the update, a value passed through untouched (an
        output aliasing its operand) and a collective's buffers (communication, not
        compute) nothing."""
        shapes = self.operand_shapes(comp, inst)
        read: list[Part] = [(s, 1.0) for s in shapes]
        written: list[Part] = [(inst.shape, 1.0)]
        if inst.opcode == "fusion" and inst.called():
            fused = self.module.computations[inst.called()[0]]
            read = [(s, _parameter_read(self.module.computations, fused, i, s)) for i, s in enumerate(shapes)]
            written = _root_written(fused, inst.shape)
        elif inst.opcode in SLICING and shapes:
            read[0] = (shapes[0], _share(inst.shape.size_bytes, shapes[0].size_bytes))
        elif inst.opcode == "dynamic-update-slice" and len(shapes) > 1:
            read[0] = (shapes[0], 0.0)
            written = [(inst.shape, _share(shapes[1].size_bytes, inst.shape.size_bytes))]
        elif inst.opcode == "custom-call" and inst.shape.is_tuple and _is_gemm(inst):
            written = [(inst.shape.elements[0], 1.0)]  # the rest is cuBLAS workspace
        elif inst.opcode == "copy-start" and inst.shape.is_tuple and inst.shape.elements:
            written = [(inst.shape.elements[0], 1.0)]  # (destination, source, context)
        return read, written

    def boundary_bytes(self, comp: Computation, inst: Instruction) -> tuple[Traffic, Traffic]:
        """(read, written) :class:`Traffic` of a top-level instruction (:meth:`boundary_parts`),
        by where the arrays live; a Pallas kernel's own estimate of its bytes is HBM traffic."""
        if (estimate := self.tpu_kernel_estimate(comp, inst)) is not None and estimate.bytes_accessed:
            written = min(float(inst.shape.size_bytes), estimate.bytes_accessed)
            return Traffic(hbm=estimate.bytes_accessed - written), Traffic(hbm=written)
        read, written = self.boundary_parts(comp, inst)
        return traffic(read), traffic(written)

    def cost(self, comp: Computation, inst: Instruction) -> Cost:
        read, written = self.boundary_bytes(comp, inst)
        f = self.flops(comp, inst)
        return Cost(f.matrix_flops, f.vector_flops, read.hbm, written.hbm, f.matrix_dtype,
                    on_chip_bytes=read.on_chip + written.on_chip, host_bytes=read.host + written.host,
                    padding_bytes=read.padding + written.padding)


Part = tuple[Shape, float]
"""An array (or tuple) and the share of its bytes an instruction touches."""


@dataclass(frozen=True)
class Traffic:
    """Bytes moved, by where the arrays live (:data:`~accelsim.importers.hlo_text.HBM_SPACE`,
    host memory, or on chip: a TPU's VMEM and scalar memories); ``padding`` is the part of
    ``hbm`` that only fills tiles."""

    hbm: float = 0.0
    on_chip: float = 0.0
    host: float = 0.0
    padding: float = 0.0


def traffic(parts: list[Part]) -> Traffic:
    """The bytes of ``parts``, each leaf as stored (tiles padded whole) in its memory space."""
    hbm = on_chip = host = padding = 0.0
    for shape, share in parts:
        for leaf in shape.leaves():
            stored = leaf.stored_bytes * share
            if leaf.memory_space == HBM_SPACE:
                hbm += stored
                padding += stored - leaf.size_bytes * share
            elif leaf.memory_space == HOST_SPACE:
                host += stored
            else:
                on_chip += stored
    return Traffic(hbm, on_chip, host, padding)


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _is_gemm(inst: Instruction) -> bool:
    return inst.attrs.get("custom_call_target", "").strip('"') in GEMM_TARGETS


def _array_elements(shape: Shape) -> int:
    return sum(leaf.num_elements for leaf in shape.leaves())


def _dims(text: str) -> list[int]:
    return [int(t) for t in strip_braces(text).replace(" ", "").split(",") if t]


def dot_flops(out: Shape, lhs: Shape, attrs: dict[str, str]) -> float:
    """``2 * out elements * prod(lhs contracting sizes)``."""
    contracting = _dims(attrs.get("lhs_contracting_dims", "{}"))
    k = math.prod(lhs.dims[d] for d in contracting if d < len(lhs.dims))
    return 2.0 * out.num_elements * k


def ragged_dot_flops(out: Shape, lhs: Shape, group_sizes: Shape, attrs: dict[str, str]) -> float:
    """As :func:`dot_flops`, except when the lhs ragged dimension is a contracting one:
    the output then holds one result per group (its leading dimension), each contracting
    only its group's slice, so the contraction is shared out among the groups."""
    flops = dot_flops(out, lhs, attrs)
    ragged = set(_dims(attrs.get("lhs_ragged_dims", "{}")))
    if ragged & set(_dims(attrs.get("lhs_contracting_dims", "{}"))):
        flops /= max(1, group_sizes.dims[-1] if group_sizes.dims else 1)
    return flops


def fft_flops(operand: Shape, attrs: dict[str, str]) -> float:
    """XLA's count (``HloCostAnalysis::HandleFft``): ``8 x operand elements x product of
    floor(log2) of the FFT lengths`` (4 multiply-adds per complex multiply)."""
    log_factors = math.prod(max(1, n).bit_length() - 1 for n in _dims(attrs.get("fft_length", "{}")))
    return 8.0 * operand.num_elements * log_factors


def _window_size(window: str) -> int:
    m = re.search(r"size=([\dx]+)", window)
    return math.prod(int(s) for s in m.group(1).split("x")) if m else 1


def _gemm_dimension_numbers(backend_config: str) -> dict[str, str] | None:
    try:
        config = json.loads(backend_config)
    except (json.JSONDecodeError, TypeError):
        return None
    gemm = config.get("gemm_backend_config", config) if isinstance(config, dict) else None
    numbers = gemm.get("dot_dimension_numbers") if isinstance(gemm, dict) else None
    if not isinstance(numbers, dict):
        return None
    contracting = numbers.get("lhs_contracting_dimensions", [])
    if not isinstance(contracting, list) or not all(isinstance(d, int | str) and str(d).isdigit() for d in contracting):
        return None  # not dimension numbers we can read: counted as without them
    return {"lhs_contracting_dims": "{" + ",".join(str(int(d)) for d in contracting) + "}"}


def _parameter_read(computations: dict[str, Computation], fused: Computation, number: int, shape: Shape) -> float:
    """Share of operand ``number`` a fusion reads: the slices taken when it is only
    sliced (directly or inside a nested fusion it is passed to), nothing when it is
    updated in place, passed through to the output untouched or only sent by a
    collective inside the fusion."""
    param = next((i for i in fused.instructions
                  if i.opcode == "parameter" and i.attrs.get("parameter_number") == str(number)), None)
    if param is None:
        return 1.0
    users = [i for i in fused.instructions if param.name in i.operands]
    if not users:
        return 1.0
    if all(u.opcode == "dynamic-update-slice" and u.operands[0] == param.name for u in users):
        return 0.0  # updated in place: the untouched part is neither read nor written
    if all(u.opcode in FUSED_COLLECTIVES or (u.is_root and u.opcode == "tuple") for u in users):
        return 0.0
    read_bytes = 0.0
    for user in users:
        if user.opcode in SLICING and user.operands[0] == param.name:
            read_bytes += user.shape.size_bytes
        elif user.opcode == "fusion" and user.called() and user.called()[0] in computations:
            nested = computations[user.called()[0]]
            read_bytes += sum(_parameter_read(computations, nested, k, shape) * shape.size_bytes
                              for k, name in enumerate(user.operands) if name == param.name)
        else:
            return 1.0
    return _share(read_bytes, shape.size_bytes)


def _root_written(fused: Computation, shape: Shape) -> list[Part]:
    """What a fusion writes, per output: an in-place update only the update; an output
    that is a parameter passed through or a collective's result, nothing."""
    root = fused.root
    names = fused.by_name()
    outputs = [names[o] for o in root.operands] if root.opcode == "tuple" else [root]
    shapes = shape.elements if root.opcode == "tuple" and len(shape.elements) == len(outputs) else (shape,) * len(outputs)
    parts: list[Part] = []
    for out, out_shape in zip(outputs, shapes):
        if out.opcode == "dynamic-update-slice" and len(out.operands) > 1:
            parts.append((out_shape, _share(names[out.operands[1]].shape.size_bytes, out_shape.size_bytes)))
        elif not (root.opcode == "tuple" and (out.opcode == "parameter" or out.opcode in FUSED_COLLECTIVES)):
            parts.append((out_shape, 1.0))
    return parts if outputs else [(shape, 1.0)]
