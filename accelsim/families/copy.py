"""``copy``: a device-to-device copy of ``bytes`` bytes (dtype is irrelevant), as a
grid of programs that each read a block and write it back out.

GPU: a vectorised copy kernel, the shape of the kernels behind ``cudaMemcpy`` D2D and
PyTorch's contiguous ``copy_``: ``num_warps`` warps (default 4, 128 threads), each thread
moving 16-byte vectors with the loop unrolled 4 times, so one iteration moves
``num_warps * 32 * 16 * 4`` bytes (8 KiB with 4 warps) with all its loads in flight at
once; a program loops over ``block_bytes`` (default 64 KiB, 8 iterations). Iterations
do not overlap (each waits for its loads), so ``pipeline_depth`` is 1.

TPU: a Pallas copy with grid ``(ceil(bytes / block_bytes),)``, ``parallel``, moving one
``block_bytes`` block (default 2 MiB) from HBM to VMEM and back per grid step,
double-buffered.

Bytes are exact: the last program moves the remainder.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, TpuChip
from accelsim.errors import InputError
from accelsim.families.base import Family, Param, fits
from accelsim.families.pallas_rule import Operand, pallas_trace
from accelsim.trace.kernel import KernelTrace, Step, Template, Transfer, check_programs

VECTOR_BYTES = 16
"""One ``ld.global.v4`` / ``st.global.v4`` per thread."""
UNROLL = 4
"""Vector loads each thread has in flight per loop iteration."""
REGISTERS_PER_THREAD = 32
"""Four 16-byte vectors (16 registers) plus addressing; low enough never to limit occupancy."""
GPU_BLOCK_BYTES = 64 * 2**10
TPU_BLOCK_BYTES = 2 * 2**20
TPU_BLOCK_GRANULE_BYTES = 4096
"""One (8, 128) tile of 32-bit words: the smallest TPU block that fills whole vregs."""
WARP_CHOICES = (1, 2, 4, 8, 16, 32)

PARAMS = (Param("bytes", int, help="total bytes copied"),)
CONFIG = (
    Param("block_bytes", int, help="bytes per program (the last program moves the remainder)"),
    Param("num_warps", int, choices=WARP_CHOICES, help="GPU: warps per program"),
)


def default_config(params: dict[str, Any], chip: Chip) -> dict[str, Any]:
    if isinstance(chip, TpuChip):
        return {"block_bytes": TPU_BLOCK_BYTES}
    return {"block_bytes": GPU_BLOCK_BYTES, "num_warps": 4}


def config_space(params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    """GPU: 16 KiB to 1 MiB per program with 4, 8 or 16 warps; TPU: 512 KiB to 8 MiB blocks.
    The default config first."""
    if isinstance(chip, TpuChip):
        candidates = [{"block_bytes": 2**k * 2**10} for k in range(9, 14)]
    else:
        candidates = [{"block_bytes": 2**k * 2**10, "num_warps": w} for k in range(4, 11) for w in (4, 8, 16)]
    out = [default_config(params, chip)]
    for config in candidates:
        if config not in out and fits(check, params, config, chip):
            out.append(config)
    return out


def check(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    block = config.get("block_bytes")
    if not isinstance(block, int) or block < 1:
        raise InputError("expected a positive integer", field="params.block_bytes")
    if isinstance(chip, TpuChip):
        if block % TPU_BLOCK_GRANULE_BYTES:
            raise InputError(f"expected a multiple of {TPU_BLOCK_GRANULE_BYTES} (one 8x128 tile of 32-bit words), "
                             f"got {block}", field="params.block_bytes")
        need = _tpu_local_bytes(block)
        if need > chip.local.capacity_bytes:
            raise InputError(f"double-buffered blocks need {need} bytes of VMEM; {chip.name} has "
                             f"{int(chip.local.capacity_bytes)}", field="params.block_bytes")
        return
    if config.get("num_warps") not in WARP_CHOICES:
        raise InputError(f"expected one of: {', '.join(map(str, WARP_CHOICES))}", field="params.num_warps")
    if block % VECTOR_BYTES:
        raise InputError(f"expected a multiple of {VECTOR_BYTES} (one vector per thread), got {block}",
                         field="params.block_bytes")


def build(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    return _build_tpu(params, config) if isinstance(chip, TpuChip) else _build_gpu(params, config, chip)


def _metadata(params, config) -> dict[str, Any]:
    return {"family": "copy", "params": dict(params), "config": dict(config), "generator": "accelsim.families.copy"}


def _tensors(total: int) -> dict[str, dict]:
    return {"src": {"shape": [total], "dtype": "int8"}, "dst": {"shape": [total], "dtype": "int8"}}


# ---------------------------------------------------------------- GPU


def _build_gpu(params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    total, block = params["bytes"], config["block_bytes"]
    iteration = config["num_warps"] * chip.occupancy.warp_size * VECTOR_BYTES * UNROLL
    programs = math.ceil(total / block)
    check_programs(programs)
    tail = total - (programs - 1) * block
    templates = [_gpu_template("full", block, iteration)] if programs > 1 else []
    if tail != block or programs == 1:
        templates.append(_gpu_template("tail", tail, iteration))
    chunks_per_program = math.ceil(block / iteration)
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": f"copy_{total}B",
            "grid": [programs],
            "resources": {"warps": config["num_warps"], "registers_per_thread": REGISTERS_PER_THREAD},
            "pipeline_depth": 1,
        },
        "tensors": _tensors(total),
        "templates": [t.model_dump() for t in templates],
        "program_template": [0] * (programs - 1) + [1] if len(templates) > 1 else None,
        "program_vars": {"first": (np.arange(programs) * chunks_per_program).tolist()},
        "metadata": _metadata(params, config),
    })


def _gpu_template(name: str, nbytes: int, iteration: int) -> Template:
    """Blocks are the buffer's iteration-sized chunks, numbered from the program's ``first``."""
    full, rest = divmod(nbytes, iteration)
    steps = []
    for index, repeat, size in (("first+i", full, iteration), (f"first+{full}", 1 if rest else 0, rest)):
        if not repeat:
            continue
        steps.append(Step(
            repeat=repeat,
            loop_var="i" if index == "first+i" else None,
            transfers=[
                Transfer(tensor="src", block=[index], bytes=size),
                Transfer(tensor="dst", block=[index], bytes=size, direction="write"),
            ],
        ))
    return Template(name=name, steps=steps)


# ---------------------------------------------------------------- TPU


def _tpu_local_bytes(block: int) -> int:
    """Two buffers each for the input and the output block."""
    return 4 * block


def _build_tpu(params: dict[str, Any], config: dict[str, Any]) -> KernelTrace:
    total, block = params["bytes"], config["block_bytes"]
    steps = math.ceil(total / block)
    check_programs(steps)
    i = np.arange(steps)
    moved = np.where(i == steps - 1, total - (steps - 1) * block, block)
    return pallas_trace(
        name=f"copy_{total}B",
        grid=[steps],
        dimension_semantics=["parallel"],
        operands=[Operand("src", "read", (i,), moved), Operand("dst", "write", (i,), moved)],
        compute=lambda sel: [],
        compute_key=np.zeros(steps),
        tensors=_tensors(total),
        local_memory_bytes=_tpu_local_bytes(block),
        buffer_count=2,
        metadata=_metadata(params, config),
    )


FAMILY = Family(
    name="copy",
    description="device-to-device copy of a byte buffer",
    params=PARAMS,
    config_params=CONFIG,
    default_config=default_config,
    config_space=config_space,
    build=build,
    check=check,
    gpu_only=("num_warps",),
)
