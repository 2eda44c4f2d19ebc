"""``elementwise``: a kernel that reads ``inputs`` arrays of ``elements`` values and writes
``outputs`` arrays of the same length, element by element (a residual add is 2 in, 1 out;
a scale or an activation 1 in, 1 out; a fill 0 in, 1 out; a read-only pass 1 in, 0 out).

GPU: the shape of PyTorch's vectorised elementwise kernels and of STREAM-style
benchmark kernels: no loop, one program per ``block_elements`` elements, ``num_warps``
warps, each thread loading its ``block_elements / threads`` elements of every input at
once (all loads in flight, then the arithmetic, then the stores), so ``pipeline_depth``
is 1 and a program's speed is bounded by one memory latency per program (Little's law:
how many bytes the resident programs keep in flight). The arithmetic is one vector
operation per input element in fp32 (PyTorch computes half types in fp32) or fp64.

TPU: a Pallas kernel with grid ``(ceil(elements / block_elements),)``, ``parallel``,
one block of every input and output per grid step, double-buffered.

Elements are exact: the last program handles the remainder.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, TpuChip
from accelsim.errors import InputError
from accelsim.families.base import Family, Param, fits, local_limit
from accelsim.families.pallas_rule import Operand, pallas_trace
from accelsim.trace.kernel import (
    DTYPE_BYTES,
    Compute,
    KernelTrace,
    Step,
    Template,
    Transfer,
    check_programs,
)

DTYPES = ("fp64", "fp32", "bf16", "fp16", "fp8", "int8")
WARP_CHOICES = (1, 2, 4, 8, 16, 32)
"""What ``config=auto`` tries; any count up to ``MAX_WARPS`` runs."""
MAX_WARPS = 32
DEFAULT_WARPS = 4
"""PyTorch's elementwise kernels launch 128 threads per block (``num_threads()``)."""
DEFAULT_ELEMENTS_PER_THREAD = 4
"""PyTorch's ``thread_work_size()``: 4 elements per thread, loaded as one vector where aligned."""
REGISTERS_BASE = 16
"""Registers per thread for indices, addresses and the bounds check."""
TPU_TARGET_BLOCK_BYTES = 2 * 2**20
"""TPU default: about 2 MiB per operand block, as the ``copy`` family."""
TPU_TILE_WORDS = 8 * 128
"""One (8, 128) tile of 32-bit words: blocks are whole tiles (packed for narrower dtypes)."""

PARAMS = (
    Param("elements", int, help="elements per array"),
    Param("dtype", str, choices=DTYPES, help="element type of every array"),
    Param("inputs", int, default=1, minimum=0, help="arrays read (each once)"),
    Param("outputs", int, default=1, minimum=0, help="arrays written"),
)
CONFIG = (
    Param("block_elements", int, help="elements per program (GPU) or per grid step (TPU)"),
    Param("num_warps", int, help="GPU: warps per program (1 to 32; the search tries 1, 2, 4, ..., 32)"),
    Param("local_memory_bytes", int, default=0, minimum=0,
          help="GPU: shared memory each program reserves (none by default); it limits the programs an SM "
               "holds, as a benchmark's shared-memory array or carveout does"),
)


def _size(params: dict[str, Any]) -> int:
    return int(DTYPE_BYTES[params["dtype"]])


def _tpu_granule(params: dict[str, Any]) -> int:
    return TPU_TILE_WORDS * max(1, 4 // _size(params))


def default_config(params: dict[str, Any], chip: Chip) -> dict[str, Any]:
    if isinstance(chip, TpuChip):
        granule = _tpu_granule(params)
        blocks = max(1, TPU_TARGET_BLOCK_BYTES // (granule * _size(params)))
        return {"block_elements": blocks * granule}
    return {"block_elements": DEFAULT_WARPS * 32 * DEFAULT_ELEMENTS_PER_THREAD, "num_warps": DEFAULT_WARPS}


def config_space(params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    """GPU: 1 to 32 warps with 1 to 16 elements per thread; TPU: 1/4 to 4 times the default
    block. The default config first."""
    default = default_config(params, chip)
    if isinstance(chip, TpuChip):
        candidates = [{"block_elements": default["block_elements"] * 2**k // 4} for k in range(5)]
    else:
        candidates = [{"block_elements": w * chip.occupancy.warp_size * e, "num_warps": w}
                      for w in WARP_CHOICES for e in (1, 2, 4, 8, 16)]
    out = [default]
    for config in candidates:
        if config not in out and fits(check, params, config, chip):
            out.append(config)
    return out


def check(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    if params["inputs"] + params["outputs"] < 1:
        raise InputError("expected at least one input or output array", field="params.inputs")
    block = config.get("block_elements")
    if not isinstance(block, int) or block < 1:
        raise InputError("expected a positive integer", field="params.block_elements")
    if isinstance(chip, TpuChip):
        if config.get("local_memory_bytes"):
            raise InputError("applies to GPUs only (a Pallas kernel's VMEM is its double-buffered blocks)",
                             field="params.local_memory_bytes")
        if params["dtype"] == "fp64":
            raise InputError(f"{chip.name} has no fp64 vector unit; expected one of: "
                             f"{', '.join(DTYPES[1:])}", field="params.dtype")
        granule = _tpu_granule(params)
        if block % granule:
            raise InputError(f"expected a multiple of {granule} (whole 8x128 tiles of {params['dtype']}), got {block}",
                             field="params.block_elements")
        need = _tpu_local_bytes(params, block)
        if need > chip.local.capacity_bytes:
            raise InputError(f"double-buffered blocks need {need} bytes of VMEM; {chip.name} has "
                             f"{int(chip.local.capacity_bytes)}", field="params.block_elements")
        return
    warps = config.get("num_warps")
    if not isinstance(warps, int) or not 1 <= warps <= MAX_WARPS:
        raise InputError(f"expected an integer from 1 to {MAX_WARPS} (up to 1024 threads)", 
                         field="params.num_warps")
    threads = config["num_warps"] * chip.occupancy.warp_size
    if block % threads:
        raise InputError(f"expected a multiple of the program's {threads} threads (whole elements per thread), "
                         f"got {block}", field="params.block_elements")
    local = config.get("local_memory_bytes", 0)
    if not isinstance(local, int) or local < 0:
        raise InputError("expected an integer >= 0", field="params.local_memory_bytes")
    limit, limit_field = local_limit(chip)
    if local > limit:
        raise InputError(f"{local} bytes per program; {chip.name} allows {int(limit)} ({limit_field})",
                         field="params.local_memory_bytes")
    registers = _registers(params, block // threads)
    if (registers > chip.occupancy.max_registers_per_thread
            or registers * threads > chip.occupancy.registers_per_core):
        raise InputError(f"{block // threads} elements per thread of {params['inputs']} input(s) need {registers} "
                         f"registers per thread: more than one {chip.name} core holds for {threads} threads",
                         field="params.block_elements")


def _registers(params: dict[str, Any], per_thread: int) -> int:
    """Each thread holds its elements of every input (and the result) in 32-bit registers."""
    words = math.ceil(per_thread * _size(params) / 4)
    return REGISTERS_BASE + words * (max(params["inputs"], 1) + 1)


def build(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    return _build_tpu(params, config) if isinstance(chip, TpuChip) else _build_gpu(params, config, chip)


def _name(params: dict[str, Any]) -> str:
    return f"elementwise_{params['inputs']}in{params['outputs']}out_{params['dtype']}_{params['elements']}"


def _metadata(params, config) -> dict[str, Any]:
    return {"family": "elementwise", "params": dict(params), "config": dict(config),
            "generator": "accelsim.families.elementwise"}


def _arrays(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(tensor name, direction) of every array, inputs first."""
    return ([(f"in{i}", "read") for i in range(params["inputs"])]
            + [(f"out{i}", "write") for i in range(params["outputs"])])


def _tensors(params: dict[str, Any]) -> dict[str, dict]:
    return {name: {"shape": [params["elements"]], "dtype": params["dtype"]} for name, _ in _arrays(params)}


def _compute(params: dict[str, Any], elements: int) -> list[Compute]:
    ops = elements * params["inputs"]
    if not ops:
        return []
    return [Compute(unit="vector", flops=float(ops), dtype="fp64" if params["dtype"] == "fp64" else "fp32")]


# ---------------------------------------------------------------- GPU


def _build_gpu(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    total, block = params["elements"], config["block_elements"]
    programs = math.ceil(total / block)
    check_programs(programs)
    tail = total - (programs - 1) * block
    templates = [_gpu_template("full", params, block)] if programs > 1 else []
    if tail != block or programs == 1:
        templates.append(_gpu_template("tail", params, tail))
    threads = config["num_warps"] * chip.occupancy.warp_size
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": _name(params),
            "grid": [programs],
            "resources": {"warps": config["num_warps"],
                          "registers_per_thread": _registers(params, block // threads),
                          "local_memory_bytes": config.get("local_memory_bytes", 0)},
            "pipeline_depth": 1,
        },
        "tensors": _tensors(params),
        "templates": [t.model_dump() for t in templates],
        "program_template": [0] * (programs - 1) + [1] if len(templates) > 1 else None,
        "metadata": _metadata(params, config),
    })


def _gpu_template(name: str, params: dict[str, Any], elements: int) -> Template:
    nbytes = elements * _size(params)
    transfers = [Transfer(tensor=tensor, block=["p0"], bytes=nbytes, direction=direction)
                 for tensor, direction in _arrays(params)]
    return Template(name=name, steps=[Step(transfers=transfers, compute=_compute(params, elements))])


# ---------------------------------------------------------------- TPU


def _tpu_local_bytes(params: dict[str, Any], block: int) -> int:
    """Two buffers of every input and output block."""
    return 2 * block * _size(params) * (params["inputs"] + params["outputs"])


def _build_tpu(params: dict[str, Any], config: dict[str, Any]) -> KernelTrace:
    total, block = params["elements"], config["block_elements"]
    steps = math.ceil(total / block)
    check_programs(steps)
    i = np.arange(steps)
    counts = np.where(i == steps - 1, total - (steps - 1) * block, block)
    moved = counts * _size(params)
    return pallas_trace(
        name=_name(params),
        grid=[steps],
        dimension_semantics=["parallel"],
        operands=[Operand(tensor, direction, (i,), moved) for tensor, direction in _arrays(params)],
        compute=lambda sel: _compute(params, int(counts[sel][0])),
        compute_key=counts,
        tensors=_tensors(params),
        local_memory_bytes=_tpu_local_bytes(params, block),
        buffer_count=2,
        metadata=_metadata(params, config),
    )


FAMILY = Family(
    name="elementwise",
    description="element-by-element kernel over equal-length arrays (add, scale, fill, read)",
    params=PARAMS,
    config_params=CONFIG,
    default_config=default_config,
    config_space=config_space,
    build=build,
    check=check,
    gpu_only=("num_warps",),
)
