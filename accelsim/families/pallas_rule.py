"""The TPU Pallas pipeline rule, turned into a compact kernel trace.

Pallas on TPU runs the grid in sequence (last axis fastest) and double-buffers every
operand: an **input** block is copied in only when its block index differs from the
previous grid step's; an **output** block is written back when the next step's index
differs, or at the end. Built-in generators and the Pallas capture both use this
function, so their traces agree by construction of the rule, not by copy.

Programs with the same copy pattern, bytes and compute share one template; block
indices travel as program variables ``<tensor>_<axis>``. Several ``pallas_call``s run one
after another (a backward pass's kernels) make one trace whose grid has a kernel axis:
``kernel_starts`` marks each kernel's first program, where every input is copied in and
before which every output is written back, as a new ``pallas_call`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelsim.arrays import unique_rows
from accelsim.trace.kernel import Compute, KernelTrace


@dataclass(frozen=True)
class Operand:
    tensor: str
    direction: str  # "read" (kernel input) or "write" (kernel output)
    index: tuple[np.ndarray, ...]
    """Block index along each tensor axis, per program in launch order."""
    bytes: np.ndarray
    """Bytes of the block each program would move (edge blocks may be smaller)."""
    pipelined: bool = True
    """False for a kernel's own DMAs (``pltpu.make_async_copy``): every program moves the
    bytes it lists, whatever the block index."""


def copy_flags(operand: Operand, kernel_starts: np.ndarray | None = None) -> np.ndarray:
    """Which programs move this operand's block under the pipeline rule (``kernel_starts``:
    programs that begin a new ``pallas_call``; the first program always does)."""
    if not operand.pipelined:
        return np.asarray(operand.bytes) > 0
    index = np.stack([np.asarray(a) for a in operand.index], axis=1)
    n = index.shape[0]
    changed = np.ones(n, dtype=bool)
    boundary = np.any(index[1:] != index[:-1], axis=1)
    if kernel_starts is not None:
        boundary |= np.asarray(kernel_starts, dtype=bool)[1:]
    if operand.direction == "read":
        changed[1:] = boundary
    else:
        changed[:-1] = boundary
    return changed


def pallas_trace(
    *,
    name: str,
    grid: Sequence[int],
    dimension_semantics: Sequence[str],
    operands: Sequence[Operand],
    compute: Callable[[np.ndarray], list[Compute]],
    compute_key: np.ndarray,
    tensors: dict[str, dict],
    local_memory_bytes: int,
    buffer_count: int,
    metadata: dict[str, Any],
    kernel_starts: np.ndarray | None = None,
) -> KernelTrace:
    """``compute(selection)`` gives the compute of the programs selected (which share
    ``compute_key``); every other per-program difference comes from the operands. An
    operand a kernel does not use has zero bytes in that kernel's programs."""
    flags = [copy_flags(op, kernel_starts) for op in operands]
    columns = [np.asarray(compute_key, dtype=float)]
    for op, moved in zip(operands, flags):
        columns.append(np.where(moved, np.asarray(op.bytes, dtype=float), 0.0))
    keys, template_of = unique_rows(np.stack(columns, axis=1))

    program_vars: dict[str, list[int]] = {}
    blocks: list[list[str]] = []
    for op in operands:
        names = []
        for axis, values in enumerate(op.index):
            var = f"{op.tensor}_{axis}"
            program_vars[var] = np.asarray(values, dtype=np.int64).tolist()
            names.append(var)
        blocks.append(names)

    templates = []
    for t, key in enumerate(keys):
        selection = template_of == t
        transfers = [
            {"tensor": op.tensor, "block": block, "bytes": int(nbytes), "direction": op.direction}
            for op, block, nbytes in zip(operands, blocks, key[1:])
            if nbytes > 0
        ]
        templates.append({
            "name": f"t{t}",
            "steps": [{"transfers": transfers, "compute": [c.model_dump() for c in compute(selection)]}],
        })
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": name,
            "grid": list(grid),
            "launch_order": "last_axis_fastest",
            "dimension_semantics": list(dimension_semantics),
            "resources": {"local_memory_bytes": int(local_memory_bytes)},
            "pipeline_depth": buffer_count,
            "kernel_starts": (np.nonzero(np.asarray(kernel_starts, dtype=bool))[0][1:].tolist()
                              if kernel_starts is not None else None),
        },
        "tensors": tensors,
        "templates": templates,
        "program_template": template_of.tolist() if len(templates) > 1 else None,
        "program_vars": program_vars,
        "metadata": metadata,
    })
