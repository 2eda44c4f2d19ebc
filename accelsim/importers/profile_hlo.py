"""A JAX profile's XLA ops, given their program's HLO text (``--hlo``): the family and
parameters each op's instruction shows. JAX traces record no shapes; the HLO does.

An op (the trace's ``hlo_op``, an instruction of the entry computation) is:

* a ``dot``, or a fusion whose computation holds exactly one ``dot`` (with elementwise ops
  around it: a GEMM with its epilogue), or a cuBLAS custom call (``__cublas$gemm``,
  ``__cublas$lt$matmul``): ``gemm`` with the dot's M, N, K and batch (contracting and
  batch dimensions from ``lhs_contracting_dims`` / ``lhs_batch_dims`` or the custom call's
  ``dot_dimension_numbers``);
* a cuDNN fused attention custom call (``__cudnn$fmha*``): ``attention``
  (:func:`accelsim.importers.hlo_fmha.fmha_params`);
* a loop fusion (``kind=kLoop``) of elementwise ops only: ``elementwise``, its output's
  elements, the operands of that size read, one array written.

Anything else (reductions, several dots, collectives) keeps the name rules' answer.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from accelsim.errors import InputError
from accelsim.importers.hlo import DTYPES, read_hlo
from accelsim.importers.hlo_fmha import fmha_params
from accelsim.importers.hlo_text import Computation, Instruction, Module, Shape, split_top, strip_braces
from accelsim.importers.profile_events import Profile

CUBLAS_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul")
ELEMENTWISE_OPCODES = frozenset((
    "parameter", "constant", "broadcast", "convert", "add", "subtract", "multiply", "divide", "maximum", "minimum",
    "negate", "exponential", "log", "tanh", "logistic", "sqrt", "rsqrt", "abs", "select", "compare", "and", "or",
    "power", "bitcast", "reshape", "copy", "clamp", "erf", "sine", "cosine"))
"""Opcodes a loop fusion may hold and still be one pass over its arrays."""
GEMM_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")


def with_hlo_shapes(profile: Profile, path: str) -> Profile:
    """``profile`` with each XLA op's family and parameters from the HLO module at ``path``."""
    module = read_hlo(path)
    ops = module.entry_computation.by_name()
    found: dict[str, tuple[str, dict[str, Any]] | None] = {}
    events = []
    for e in profile.events:
        if e.hlo_op is not None and e.hlo_op not in found:
            found[e.hlo_op] = family_of(module, ops[e.hlo_op]) if e.hlo_op in ops else None
        hit = found.get(e.hlo_op) if e.hlo_op is not None else None
        events.append(replace(e, hlo_class=hit[0], params=hit[1]) if hit else e)
    if not any(e.hlo_op in ops for e in profile.events):
        raise InputError("none of the trace's XLA ops is an instruction of this module's entry computation (the HLO "
                         "of another program?)", source=path)
    return replace(profile, events=tuple(events))


def family_of(module: Module, inst: Instruction) -> tuple[str, dict[str, Any]] | None:
    if inst.opcode == "dot":
        return _gemm(inst, _operand_shapes(module.entry_computation, inst))
    if inst.opcode == "custom-call":
        target = inst.attrs.get("custom_call_target", "").strip('"')
        shapes = _operand_shapes(module.entry_computation, inst)
        if target in CUBLAS_TARGETS:
            return _cublas(inst, shapes)
        attention = fmha_params(target, _backend_config(inst), shapes)
        if attention is not None and _trace_dtype(attention["dtype"]) in ("bf16", "fp16", "fp8"):
            return "attention", {**attention, "dtype": _trace_dtype(attention["dtype"])}
        return None
    if inst.opcode == "fusion":
        called = [module.computations[n] for n in inst.called() if n in module.computations]
        if len(called) != 1:
            return None
        dots = [i for i in called[0].instructions if i.opcode == "dot"]
        if len(dots) == 1:
            return _gemm(dots[0], _operand_shapes(called[0], dots[0]))
        if inst.attrs.get("kind") == "kLoop" and all(i.opcode in ELEMENTWISE_OPCODES for i in called[0].instructions):
            return _elementwise(inst, _operand_shapes(module.entry_computation, inst))
    return None


def _trace_dtype(hlo_dtype: str) -> str | None:
    """The measurement format's dtype of an HLO element type (None: not one the families take)."""
    return "fp8" if hlo_dtype.startswith("f8") else DTYPES.get(hlo_dtype)


def _operand_shapes(comp: Computation, inst: Instruction) -> list[Shape]:
    names = comp.by_name()
    return [names[n].shape for n in inst.operands if n in names]


def _dims(text: str) -> list[int]:
    return [int(t) for t in split_top(strip_braces(text)) if t.strip().isdigit()]


def _gemm(inst: Instruction, operands: list[Shape], numbers: dict[str, list[int]] | None = None):
    """M, N, K and batch of a dot of ``operands`` [lhs, rhs]: K the product of the contracting
    sizes, batch of the batch sizes, M and N of the rest."""
    if len(operands) < 2 or operands[0].is_tuple or operands[1].is_tuple:
        return None
    lhs, rhs = operands[0], operands[1]
    numbers = numbers or {key: _dims(inst.attrs.get(key, "{}")) for key in
                          ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims")}
    lc, rc, lb, rb = (numbers[k] for k in ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
                                           "rhs_batch_dims"))
    if any(d >= len(lhs.dims) for d in lc + lb) or any(d >= len(rhs.dims) for d in rc + rb):
        return None
    k = math.prod(lhs.dims[d] for d in lc)
    batch = math.prod(lhs.dims[d] for d in lb)
    m = math.prod(s for d, s in enumerate(lhs.dims) if d not in lc + lb)
    n = math.prod(s for d, s in enumerate(rhs.dims) if d not in rc + rb)
    dtype = _trace_dtype(lhs.dtype)
    if k != math.prod(rhs.dims[d] for d in rc) or min(m, n, k, batch) < 1 or dtype not in GEMM_DTYPES:
        return None
    return "gemm", {"M": m, "N": n, "K": k, "dtype": dtype, "batch": batch}


def _backend_config(inst: Instruction) -> str:
    """The backend config's JSON text: written as a quoted JSON string, or as the JSON itself."""
    text = inst.attrs.get("backend_config", "")
    if not text.startswith('"'):
        return text
    try:
        unquoted = json.loads(text)
    except ValueError:
        return ""
    return unquoted if isinstance(unquoted, str) else ""


def _cublas(inst: Instruction, operands: list[Shape]):
    """A cuBLAS custom call: its ``gemm_backend_config.dot_dimension_numbers``."""
    try:
        config = json.loads(_backend_config(inst))["gemm_backend_config"]["dot_dimension_numbers"]
        numbers = {key: [int(d) for d in config.get(key, [])] for key in
                   ("lhs_contracting_dimensions", "rhs_contracting_dimensions", "lhs_batch_dimensions",
                    "rhs_batch_dimensions")}
    except (ValueError, KeyError, TypeError):
        return None
    return _gemm(inst, operands, {key.replace("dimensions", "dims"): value for key, value in numbers.items()})


def _elementwise(inst: Instruction, operands: list[Shape]):
    out = inst.shape
    if out.is_tuple or out.num_elements < 1:
        return None
    dtype = _trace_dtype(out.dtype)
    if dtype not in ("fp64", "fp32", "bf16", "fp16", "fp8", "int8"):
        return None
    inputs = sum(1 for s in operands if not s.is_tuple and s.num_elements == out.num_elements)
    return "elementwise", {"elements": out.num_elements, "dtype": dtype, "inputs": inputs, "outputs": 1}
