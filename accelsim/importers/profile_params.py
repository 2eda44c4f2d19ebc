"""A profiled kernel's family parameters, from the input shapes of the op that launched it
(``record_shapes=True``): GEMM M, N, K from ``aten::mm`` / ``addmm`` / ``bmm`` / ``linear``;
attention from the SDPA and FlashAttention ops; norms and softmax from their input and
weight; elementwise and copies from their tensors. Each function returns the family's
parameters, or a reason why the shapes do not give them (the kernel then keeps no record
and is replayed as measured).

Shapes are checked, not trusted: a GEMM whose operands do not agree on K, attention whose
heads do not divide, a product past the families' limits give a reason, never a record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from accelsim.importers.profile_events import DeviceEvent, LaunchOp

DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
          "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "signed char": "int8", "int8": "int8",
          "BFloat16": "bf16", "Half": "fp16", "Float": "fp32"}
"""PyTorch's ``Input type`` names -> the measurement format's dtypes."""
SIZES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
MAX_ELEMENTS = 2**48
"""Elements of one tensor (256 Ti: past any device memory), so products stay exact."""

Params = dict[str, Any]
Found = Params | str
"""Parameters, or why there are none."""


def numel(dims: tuple[int, ...]) -> int:
    return math.prod(dims)


def _dtype(op: LaunchOp, index: int, allowed: Sequence[str]) -> str | None:
    dtype = DTYPES.get(op.types[index]) if index < len(op.types) else None
    return dtype if dtype in allowed else None


def _dims(op: LaunchOp, index: int) -> tuple[int, ...] | None:
    dims = op.dims[index] if index < len(op.dims) else None
    return dims if dims and numel(dims) <= MAX_ELEMENTS and min(dims) > 0 else None


def _flag(op: LaunchOp, index: int) -> bool | None:
    value = op.values[index] if index < len(op.values) else ""
    return {"True": True, "False": False, "1": True, "0": False}.get(value.strip())


def _find(ops: Sequence[LaunchOp], table: dict[str, Any]) -> tuple[LaunchOp, Any] | None:
    """The innermost op whose name ``table`` knows, with what the table says of it."""
    for op in ops:
        if op.name in table:
            return op, table[op.name]
    return None


def _first_found(ops: Sequence[LaunchOp], table: dict[str, Any], read: Callable[[LaunchOp, Any], Found],
                 none: str) -> Found:
    """The parameters the innermost op of ``table`` that gives them gives (``read``), else
    the innermost one's reason, else ``none``."""
    reasons = []
    for op in ops:
        if op.name in table:
            found = read(op, table[op.name])
            if not isinstance(found, str):
                return found
            reasons.append(found)
    return reasons[0] if reasons else none


NAME_DTYPES = ((r"BFloat16|bfloat16|bf16", "bf16"), (r"c10::Half|half_t|\bf16\b|fp16|_f16", "fp16"),
               (r"e4m3|e5m2|fp8", "fp8"))
"""Dtypes a kernel's name spells out (``c10::BFloat16``, ``cutlass::bfloat16_t``,
``sm90_xmma_gemm_bf16bf16_...``), for traces that record shapes but not types (Nsight
Systems' NVTX ranges from ``emit_nvtx``)."""
TYPE_OF = {"bf16": "c10::BFloat16", "fp16": "c10::Half", "fp8": "c10::Float8_e4m3fn"}


def typed(event: DeviceEvent) -> DeviceEvent:
    """``event`` with the dtype its kernel's name spells given to its ops' shaped inputs,
    where the trace recorded no types (never over recorded ones)."""
    if not event.ops or any(op.types for op in event.ops):
        return event
    dtype = next((d for pattern, d in NAME_DTYPES if re.search(pattern, event.name)), None)
    if dtype is None:
        return event
    ops = tuple(LaunchOp(op.name, op.dims, tuple(TYPE_OF[dtype] if d else "" for d in op.dims), op.values)
                for op in event.ops)
    return replace(event, ops=ops)


# ---------------------------------------------------------------- GEMM

GEMM_OPERANDS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2),
                 "aten::matmul": (0, 1), "aten::_scaled_mm": (0, 1), "aten::linear": (0, 1)}
"""Where A and B are among the op's inputs (``linear``'s B is the [N, K] weight)."""


def gemm_params(ops: Sequence[LaunchOp]) -> Found:
    found = _find(ops, GEMM_OPERANDS)
    if found is None:
        return "no GEMM op (aten::mm, addmm, bmm, baddbmm, matmul, linear) launched it"
    op, (a_at, b_at) = found
    a, b = _dims(op, a_at), _dims(op, b_at)
    if a is None or b is None:
        return f"{op.name} has no input shapes (record_shapes=True records them)"
    if op.name == "aten::linear":
        if len(b) != 2 or a[-1] != b[1]:
            return f"{op.name}: input {list(a)} and weight {list(b)} do not agree on K"
        m, n, k, batch = numel(a[:-1]), b[0], a[-1], 1
    elif len(a) == 2 and len(b) == 2:
        m, k, n, batch = a[0], a[1], b[1], 1
        if b[0] != k:
            return f"{op.name}: {list(a)} x {list(b)} do not agree on K"
    elif len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        batch, m, k, n = a[0], a[1], a[2], b[2]
    elif len(a) > 2 and len(b) == 2 and a[-1] == b[0]:  # matmul of a batch of rows by one matrix: one GEMM
        m, k, n, batch = numel(a[:-1]), a[-1], b[1], 1
    else:
        return f"{op.name}: shapes {list(a)} x {list(b)} are not a GEMM the family takes"
    dtype = _dtype(op, a_at, ("fp32", "bf16", "fp16", "fp8", "int8"))
    if dtype is None:
        return f"{op.name}: input type {op.types[a_at] if a_at < len(op.types) else '?'} is not a GEMM dtype"
    return {"M": m, "N": n, "K": k, "dtype": dtype, "batch": batch}


# ---------------------------------------------------------------- attention

ATTENTION_OPS = {
    # name: (q, k, v positions, is_causal position, layout of q: BHSD or BSHD, pass)
    "aten::_scaled_dot_product_flash_attention": (0, 4, "bhsd", "fwd"),
    "aten::_scaled_dot_product_efficient_attention": (0, 6, "bhsd", "fwd"),
    "aten::_scaled_dot_product_cudnn_attention": (0, 6, "bhsd", "fwd"),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (0, 4, "bhsd", "fwd"),
    "aten::scaled_dot_product_attention": (0, 5, "bhsd", "fwd"),
    "aten::_flash_attention_forward": (0, 8, "bshd", "fwd"),
    "flash_attn::_flash_attn_forward": (0, 5, "bshd", "fwd"),
    "aten::_scaled_dot_product_flash_attention_backward": (1, 11, "bhsd", "bwd-kernel"),
    "aten::_flash_attention_backward": (1, 9, "bshd", "bwd-kernel"),
    "flash_attn::_flash_attn_backward": (1, 9, "bshd", "bwd-kernel"),
}
"""Ops whose inputs are q, k, v (from the first position given) and ``is_causal``, per
their ATen or flash_attn signatures; a backward op's main kernel is the kernel alone
(``pass: bwd-kernel``)."""


def attention_params(ops: Sequence[LaunchOp]) -> Found:
    return _first_found(ops, ATTENTION_OPS, _attention_of, "no attention op (SDPA, flash_attn) launched it")


def _attention_of(op: LaunchOp, where: tuple[int, int, str, str]) -> Found:
    first, causal_at, layout, direction = where
    q, k, v = (_dims(op, first + i) for i in range(3))
    if q is None or k is None or v is None or not len(q) == len(k) == len(v) == 4:
        return f"{op.name} has no 4-d q, k, v shapes (record_shapes=True records them)"
    if layout == "bshd":
        q, k, v = ((t[0], t[2], t[1], t[3]) for t in (q, k, v))
    batch, heads, seq_q, head_dim = q
    if k[0] != batch or v[:3] != k[:3] or k[3] != head_dim or heads % k[1]:
        return f"{op.name}: q {list(q)}, k {list(k)}, v {list(v)} are not one attention of the family's shapes"
    causal = _flag(op, causal_at)
    if causal is None:
        return f"{op.name}: its is_causal input is not recorded"
    if causal and seq_q != k[2]:
        return (f"{op.name}: causal with seq_q {seq_q} != seq_kv {k[2]} (PyTorch aligns the mask top-left, the "
                "family bottom-right)")
    dtype = _dtype(op, first, ("bf16", "fp16", "fp8"))
    if dtype is None:
        return f"{op.name}: input type {op.types[first] if first < len(op.types) else '?'} is not an attention dtype"
    return {"batch": batch, "heads": heads, "kv_heads": k[1], "seq_q": seq_q, "seq_kv": k[2], "head_dim": head_dim,
            "causal": causal, "dtype": dtype, "pass": direction}


# ---------------------------------------------------------------- norms and softmax

NORM_OPS = {"aten::native_layer_norm": 2, "aten::layer_norm": 2, "aten::rms_norm": 2, "aten::_fused_rms_norm": 2}
"""Norm ops and where their weight is (its size is the normalised columns)."""
SOFTMAX_OPS = {"aten::_softmax": 1, "aten::softmax": 1}
"""Softmax ops and where their ``dim`` is."""


def _rows_cols(op: LaunchOp, cols: int) -> Found:
    x = _dims(op, 0)
    if x is None:
        return f"{op.name} has no input shape (record_shapes=True records it)"
    if cols < 1 or numel(x) % cols:
        return f"{op.name}: {cols} columns do not divide input {list(x)}"
    dtype = _dtype(op, 0, ("fp32", "bf16", "fp16"))
    if dtype is None:
        return f"{op.name}: input type {op.types[0] if op.types else '?'} is not fp32, bf16 or fp16"
    return {"rows": numel(x) // cols, "cols": cols, "dtype": dtype}


def norm_params(ops: Sequence[LaunchOp]) -> Found:
    found = _find(ops, NORM_OPS)
    if found is None:
        return "no norm op (aten::layer_norm, rms_norm) launched it"
    op, weight_at = found
    weight, x = _dims(op, weight_at), _dims(op, 0)
    if weight is None and x is None:
        return f"{op.name} has no input shapes (record_shapes=True records them)"
    return _rows_cols(op, numel(weight) if weight is not None else x[-1])


def softmax_params(ops: Sequence[LaunchOp]) -> Found:
    found = _find(ops, SOFTMAX_OPS)
    if found is None:
        return "no softmax op (aten::_softmax) launched it"
    op, dim_at = found
    x = _dims(op, 0)
    if x is None:
        return f"{op.name} has no input shape (record_shapes=True records it)"
    dim = op.values[dim_at].strip() if dim_at < len(op.values) else ""
    if dim not in ("-1", str(len(x) - 1)):
        return f"{op.name}: over dim {dim or '?'}, not the last (the family soft-maxes rows)"
    return _rows_cols(op, x[-1])


# ---------------------------------------------------------------- elementwise and copies


def elementwise_params(event: DeviceEvent) -> Found:
    """A fill, a memset or an elementwise op: the arrays the launching op reads and writes,
    when every tensor input has one size (or is a scalar); a broadcast reads less."""
    if event.kind == "memset":
        return {"elements": event.bytes, "dtype": "int8", "inputs": 0, "outputs": 1} if event.bytes else \
            "the memset's size is not recorded"
    if not event.ops:
        return "no op launched it"
    op = event.ops[0]
    tensors = [(d, i) for i, d in enumerate(op.dims) if d]
    if not tensors:
        return f"{op.name} has no input shapes (record_shapes=True records them)"
    elements = max(numel(d) for d, _ in tensors)
    if elements > MAX_ELEMENTS or any(numel(d) not in (1, elements) for d, _ in tensors):
        return f"{op.name}: inputs of several sizes (a broadcast)"
    full = [i for d, i in tensors if numel(d) == elements]
    dtype = _dtype(op, full[0], tuple(SIZES))
    if dtype is None:
        return f"{op.name}: input type {op.types[full[0]] if full[0] < len(op.types) else '?'} is not a known dtype"
    fills = "Fill" in event.name or op.name in ("aten::fill_", "aten::zero_", "aten::zeros", "aten::ones")
    return {"elements": elements, "dtype": dtype, "inputs": 0 if fills else len(full), "outputs": 1}


def copy_params(event: DeviceEvent) -> Found:
    """A device copy's bytes: the copy's own size, else the launching op's source tensor
    (``aten::copy_``'s second input, a concatenation's inputs), when no dtype changes."""
    if event.bytes:
        return {"bytes": event.bytes}
    if not event.ops:
        return "no op launched it and the copy's size is not recorded"
    op = event.ops[0]
    sources = [(d, i) for i, d in enumerate(op.dims) if d][1 if op.name.startswith("aten::copy_") else 0:]
    if not sources:
        return f"{op.name} has no input shapes (record_shapes=True records them)"
    types = {op.types[i] if i < len(op.types) else "" for _, i in sources}
    dtype = DTYPES.get(next(iter(types))) if len(types) == 1 else None
    target = op.types[0] if op.types else ""
    if dtype is None or (op.name.startswith("aten::copy_") and target not in types):
        return f"{op.name}: a copy that converts dtypes (an elementwise op, not a copy)"
    total = sum(numel(d) for d, _ in sources) * SIZES[dtype]
    return {"bytes": total} if total <= MAX_ELEMENTS else f"{op.name}: a copy of {total} bytes"


FAMILY_PARAMS: dict[str, Callable[[DeviceEvent], Found]] = {
    "gemm": lambda e: gemm_params(e.ops),
    "attention": lambda e: attention_params(e.ops),
    "layernorm": lambda e: norm_params(e.ops),
    "rmsnorm": lambda e: norm_params(e.ops),
    "softmax": lambda e: softmax_params(e.ops),
    "elementwise": elementwise_params,
    "copy": copy_params,
}
"""Per kernel family, the parameters of a profiled kernel of it (or why none)."""
