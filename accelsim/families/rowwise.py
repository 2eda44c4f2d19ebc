"""``softmax``, ``layernorm``, ``rmsnorm``: forward row-wise kernels over an ``[rows, cols]``
input, as the Triton kernels of Liger-Kernel run them on GPUs and as a Pallas kernel
with ``[block_rows, cols]`` blocks runs them on TPUs.

GPU, one pass (the row fits in registers): one program per ``block_rows`` rows (one
row per program when rows are long, several when they are short; Triton's row tensor is
``[block_rows, next_pow2(cols)]``, masked). A program reads its rows once, reads the
per-column parameters (layernorm weight and bias, rmsnorm weight: the same block for
every program, so the L2 serves all but the first read), computes in fp32 registers,
writes the output rows and the per-row statistics (layernorm mean and rstd, rmsnorm
rstd; fp32). The last program's rows are masked and counted exactly.

GPU, two passes (the row does not fit in registers, see :func:`gpu_layout`): one row per
program and a loop over column chunks, **twice**: a statistics pass that reads every
chunk of the row (softmax: online max and sum of exponentials; norms: sum and sum of
squares), then an apply pass that reads every chunk again, with the parameters, and
writes the output chunk. So the input is read twice; the second read may hit in the L2
(the engine's reuse model decides).

TPU: a Pallas kernel with grid ``(ceil(rows / block_rows),)``, ``parallel``; the input
and output blocks are ``[block_rows, cols]``, the parameter blocks have a constant index
(copied once), statistics blocks are ``[block_rows]``. The block is upcast to an fp32
scratch in VMEM. Rows too long for an 8-row block in VMEM are an error (no column loop
on TPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, TpuChip
from accelsim.errors import InputError
from accelsim.families.base import Family, Param, fits
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

STAT_BYTES = 4
"""Per-row statistics (mean, rstd) are fp32, as in Liger-Kernel."""
FP32_BYTES = 4

REGISTERS_OVERHEAD = 32
"""Registers per thread beyond the row's fp32 values: addresses, loop state, reductions."""
MAX_REGISTERS_PER_THREAD = 255
"""Registers a thread may hold on NVIDIA GPUs; an estimate above it means spilling."""
REGISTERS_PER_DOT = 8
"""Registers per thread for each matrix operation of a step (operand addresses and
fragments), on top of ``REGISTERS_OVERHEAD``: 32 + 8 = 40 is the gemm family's overhead,
32 + 2 x 8 = 48 the attention forward's (the Triton capture estimates the same way)."""
MIN_ELEMENTS_PER_PROGRAM = 1024
"""GPU default: rows per program so a program holds at least this many elements (4 warps
with 8 values per thread: one 16-byte bf16 vector load each)."""
LOOP_ELEMENTS_PER_THREAD = 32
"""GPU two-pass: fp32 values per thread per column chunk. 32 + overhead = 64 registers,
the budget of a 1024-thread program, so the loop never limits occupancy by registers (an
estimate: this repository has no looping row kernel to compile; a chunk holds only the row's
values, or the row's and the weights' in the apply pass, fewer than a one-pass program)."""
TPU_TARGET_SCRATCH_BYTES = 2 * 2**20
"""TPU default: the largest power-of-two ``block_rows`` whose fp32 scratch block is at most
this (a few microseconds of HBM traffic per grid step against ~0.35 us step overhead)."""
WARP_CHOICES = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class RowOp:
    """What one row-wise kernel reads, writes and computes.

    Flops are fp32 vector operations per element (or per row) as the Liger-Kernel forward
    kernels compute them; ``exps`` are exponentials and ``rsqrt`` reciprocal square roots
    on the special-function unit. One-pass counts apply when the row stays in registers;
    the two-pass kernel splits the work into a statistics and an apply pass.
    """

    name: str
    description: str
    weights: tuple[str, ...]
    """Per-column parameters read by every row (``[cols]``, in the input dtype)."""
    stats: tuple[str, ...]
    """Per-row fp32 outputs besides ``Y``."""
    flops_per_element: int
    exps_per_element: int
    flops_per_row: int
    stats_flops_per_element: int
    stats_exps_per_element: int
    apply_flops_per_element: int
    apply_exps_per_element: int
    two_pass_flops_per_row: int
    rsqrt_per_row: int
    registers: dict[int, tuple[tuple[int, int, int, int], float]]
    """One pass, by input bytes per element (4: fp32; 2: bf16, fp16): registers per thread
    of a one-row program whose threads hold 8, 16, 32 and 64 elements each (linear between
    them, the 32-64 slope beyond 64, the 8-element count below 8), and the registers each
    further element adds when a program holds several rows (the row and its temporaries
    again; the weights are per column and do not grow). Measured, not guessed: what Triton
    3.9 allocates for this repository's kernels (``kernels/triton/{softmax,layernorm,rmsnorm}.py``)
    compiled for sm_90 (``accelsim capture triton --compile-for sm_90``), none spilled. The
    one-row counts are the median of one or two launches (1K-16K columns at 4 to 16 warps) and
    exact at 8 to 64 elements; the per-row slope is a least-squares fit to 2-4 rows of 1K and
    4K columns and 8 rows of 1K at 4 warps (within 13 registers). Not exact elsewhere: rows
    narrower than a 16-byte vector per thread compile to fewer registers (14-20 at 100 columns
    and 4 warps where this gives 21-40), and beyond 64 elements per thread Triton spills
    (layernorm fp32 at 128: 32 registers and 3 KB spilled per thread) where this
    extrapolates."""


# Softmax, one pass: max 1, x - max 1, sum of exps 1, divide by the sum 1 = 4 flops and one exp
# per element. Two passes (Liger's online multi-block kernel): statistics max 1, x - max 1,
# sum 1 and one exp; apply x - max 1, divide 1 and the exp again. Per-chunk rescaling of the
# running sum (a few scalar operations per chunk of thousands of elements) is left out.
SOFTMAX_OP = RowOp(
    name="softmax", description="softmax over each row of [rows, cols] (forward)",
    weights=(), stats=(),
    flops_per_element=4, exps_per_element=1, flops_per_row=0,
    stats_flops_per_element=3, stats_exps_per_element=1,
    apply_flops_per_element=2, apply_exps_per_element=1, two_pass_flops_per_row=0,
    rsqrt_per_row=0, registers={4: ((21, 32, 58, 101), 1.11), 2: ((22, 31, 51, 89), 1.14)},
)
# LayerNorm, one pass: sum 1, x - mean 1, square 1, sum of squares 1, * rstd 1, * weight 1,
# + bias 1 = 7 per element; per row mean = sum / n, var = sum_sq / n, + eps = 3, one rsqrt.
# Two passes: statistics sum 1, square 1, sum of squares 1; apply x - mean 1, * rstd 1,
# * weight 1, + bias 1 (7 per element again); per row var = E[x^2] - mean^2 adds 2 (5).
LAYERNORM_OP = RowOp(
    name="layernorm", description="layer norm over each row of [rows, cols] with weight and bias (forward)",
    weights=("W", "B"), stats=("mean", "rstd"),
    flops_per_element=7, exps_per_element=0, flops_per_row=3,
    stats_flops_per_element=3, stats_exps_per_element=0,
    apply_flops_per_element=4, apply_exps_per_element=0, two_pass_flops_per_row=5,
    rsqrt_per_row=1, registers={4: ((40, 64, 128, 236), 1.34), 2: ((32, 59, 93, 162), 1.38)},
)
# RMSNorm: square 1, sum 1, * rstd 1, * weight 1 = 4 per element (statistics 2, apply 2);
# per row mean square = sum / n, + eps = 2, one rsqrt.
RMSNORM_OP = RowOp(
    name="rmsnorm", description="RMS norm over each row of [rows, cols] with weight (forward)",
    weights=("W",), stats=("rstd",),
    flops_per_element=4, exps_per_element=0, flops_per_row=2,
    stats_flops_per_element=2, stats_exps_per_element=0,
    apply_flops_per_element=2, apply_exps_per_element=0, two_pass_flops_per_row=2,
    rsqrt_per_row=1, registers={4: ((31, 48, 87, 165), 1.28), 2: ((26, 39, 62, 121), 1.08)},
)

PARAMS = (
    Param("rows", int, help="independent rows (tokens)"),
    Param("cols", int, help="elements per row, normalised over"),
    Param("dtype", str, "bf16", ("fp32", "bf16", "fp16"), "input, output and weight dtype"),
)
NORM_IMPLS = {
    "layernorm": {"torch": "PyTorch eager (vectorized_layer_norm_kernel: 128 threads per row, the row read twice)",
                  "liger": "Liger-Kernel's Triton kernel at its own launch (one row per program, "
                           "calculate_settings warps)",
                  "triton": "this repository's Triton kernel at the config it is given or finds"},
    "rmsnorm": {"torch": "PyTorch eager composite (to fp32, pow, mean, rsqrt, mul, cast, mul by the weight: "
                         "F.rms_norm before PyTorch fused it, and Hugging Face's LlamaRMSNorm), one kernel per op",
                "liger": "Liger-Kernel's Triton kernel at its own launch (one row per program, "
                         "calculate_settings warps)",
                "triton": "this repository's Triton kernel at the config it is given or finds"},
}
"""The norms' implementations (``--param impl=``), one module each in :mod:`accelsim.families.norm_impls`."""


def norm_params(name: str) -> tuple[Param, ...]:
    """A norm family's parameters: the row-wise ones, the weights' dtype and the implementation."""
    impls = NORM_IMPLS[name]
    return PARAMS + (
        Param("weight_dtype", str, "input", ("input", "fp32", "bf16", "fp16"),
              help="dtype of the per-column weights (input: the input's; a module whose weights stay fp32 "
                   "under bf16 activations, as Liger's and Hugging Face's benchmarks keep them, reads 4 bytes "
                   "per column)"),
        Param("impl", str, "default", ("default", *impls),
              help="implementation: " + "; ".join(f"{key}: {what}" for key, what in impls.items())
              + " (default: triton; TPUs run the Pallas kernel)"),
    )


def weight_dtype(params: dict[str, Any]) -> str:
    """The weights' dtype: ``weight_dtype``, or the input's where it says ``input`` (or is absent)."""
    given = params.get("weight_dtype", "input")
    return params["dtype"] if given == "input" else given
CONFIG = (
    Param("block_rows", int, help="rows per program (GPU: a power of two; TPU: a multiple of 8 or all rows)"),
    Param("num_warps", int, choices=WARP_CHOICES, help="GPU: warps per program"),
)


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


# ---------------------------------------------------------------- GPU layout


@dataclass(frozen=True)
class GpuLayout:
    """How a Triton program holds its rows: whole (one pass) or in column chunks (two passes)."""

    block_rows: int
    chunk_cols: int | None
    """``None``: whole rows in registers; else the two-pass loop's chunk width."""
    registers_per_thread: int


def register_budget(chip: Chip, num_warps: int) -> int:
    """Registers a thread may use with one program of ``num_warps`` resident on an SM."""
    occ = chip.occupancy
    assert occ is not None
    threads = num_warps * occ.warp_size
    return min(occ.max_registers_per_thread, occ.registers_per_core // threads)


ONE_ROW_POINTS = (8, 16, 32, 64)
"""Elements per thread at which :attr:`RowOp.registers` gives a one-row program's count."""


def one_pass_registers(op: RowOp, block_rows: int, width: int, threads: int, dtype: str) -> int:
    """Registers per thread of a one-pass program holding ``block_rows`` rows of ``width``
    (a power of two) columns over ``threads`` threads (:attr:`RowOp.registers`)."""
    counts, per_extra = op.registers[4 if DTYPE_BYTES[dtype] >= 4 else 2]
    row = width / threads  # one row's elements per thread
    last_slope = (counts[-1] - counts[-2]) / (ONE_ROW_POINTS[-1] - ONE_ROW_POINTS[-2])
    one_row = float(np.interp(row, ONE_ROW_POINTS, counts)) + last_slope * max(0.0, row - ONE_ROW_POINTS[-1])
    extra = max(0.0, block_rows * width / threads - max(row, ONE_ROW_POINTS[0]))
    return math.ceil(one_row + per_extra * extra)


REGISTER_ESTIMATE_SLACK = 13
"""How far :func:`one_pass_registers` may be off the compiler (its fit's largest miss): an
estimate this close above the budget is taken to fit at the budget, as the compiler would
fit it (layernorm fp32, 4 rows of 4096 columns on 4 warps: 257 estimated, 255 compiled)."""


def gpu_layout(op: RowOp, params: dict[str, Any], config: dict[str, Any], chip: Chip) -> GpuLayout:
    """One pass when ``block_rows`` rows of ``next_pow2(cols)`` values, with what the kernel
    keeps live beside them, fit in the register budget, else two passes over chunks
    (``block_rows`` must then be 1). Triton itself never loops: it compiles the one-pass
    kernel and spills what does not fit to local memory; the column loop, which reads the row
    a second time through the L2, stands in for that extra traffic."""
    block_rows, warps = config["block_rows"], config["num_warps"]
    threads = warps * chip.occupancy.warp_size
    registers = one_pass_registers(op, block_rows, _next_pow2(params["cols"]), threads, params["dtype"])
    budget = register_budget(chip, warps)
    if registers <= budget + REGISTER_ESTIMATE_SLACK:
        return GpuLayout(block_rows, None, min(registers, budget))
    if block_rows > 1:
        raise InputError(
            f"{block_rows} rows of {params['cols']} columns need {registers} registers per thread with "
            f"{warps} warps; {chip.name} allows {register_budget(chip, warps)}: use block_rows=1 "
            "(a column loop) or more warps",
            field="params.block_rows",
        )
    return GpuLayout(1, threads * LOOP_ELEMENTS_PER_THREAD, LOOP_ELEMENTS_PER_THREAD + REGISTERS_OVERHEAD)


def _liger_num_warps(elements: int) -> int:
    """Liger-Kernel ``calculate_settings``: warps from the Triton block size."""
    if elements >= 32768:
        return 32
    if elements >= 8192:
        return 16
    if elements >= 2048:
        return 8
    return 4


# ---------------------------------------------------------------- configs


def default_config(op: RowOp, params: dict[str, Any], chip: Chip) -> dict[str, Any]:
    rows, cols = params["rows"], params["cols"]
    if isinstance(chip, TpuChip):
        return {"block_rows": _tpu_default_rows(op, params, chip)}
    width = _next_pow2(cols)
    block_rows = min(max(1, MIN_ELEMENTS_PER_PROGRAM // width), _next_pow2(rows))
    warps = _liger_num_warps(block_rows * width)
    while warps > 1 and warps * chip.occupancy.warp_size > block_rows * width:
        warps //= 2
    return {"block_rows": block_rows, "num_warps": warps}


def _tpu_default_rows(op: RowOp, params: dict[str, Any], chip: Chip) -> int:
    rows, cols = params["rows"], params["cols"]
    block_rows = 8
    while 2 * block_rows * cols * FP32_BYTES <= TPU_TARGET_SCRATCH_BYTES:
        block_rows *= 2
    while block_rows > 8 and _tpu_local_bytes(op, block_rows, cols, params["dtype"]) > chip.local.max_per_program_bytes:
        block_rows //= 2
    return rows if block_rows >= rows else block_rows


def config_space(op: RowOp, params: dict[str, Any], chip: Chip) -> list[dict[str, Any]]:
    """Powers of two of ``block_rows`` (GPU up to 64, TPU 8 to 1024) and, on GPUs, 4, 8 or 16
    warps; the default config first."""
    rows = params["rows"]
    candidates = [default_config(op, params, chip)]
    if isinstance(chip, TpuChip):
        candidates += [{"block_rows": min(b, rows)} for b in (8, 16, 32, 64, 128, 256, 512, 1024)]
    else:
        candidates += [{"block_rows": b, "num_warps": w}
                       for b in (1, 2, 4, 8, 16, 32, 64) if b <= _next_pow2(rows) for w in (4, 8, 16)]
    out = []
    for config in candidates:
        if config not in out and fits(check, op, params, config, chip):
            out.append(config)
    return out


def check(op: RowOp, params: dict[str, Any], config: dict[str, Any], chip: Chip) -> None:
    block_rows = config.get("block_rows")
    if not isinstance(block_rows, int) or block_rows < 1:
        raise InputError("expected a positive integer", field="params.block_rows")
    if isinstance(chip, TpuChip):
        _check_tpu(op, params, block_rows, chip)
        return
    warps = config.get("num_warps")
    if warps not in WARP_CHOICES:
        raise InputError(f"expected one of: {', '.join(map(str, WARP_CHOICES))}", field="params.num_warps")
    if block_rows & (block_rows - 1):
        raise InputError(f"expected a power of two (a Triton block dimension), got {block_rows}",
                         field="params.block_rows")
    gpu_layout(op, params, config, chip)


def _check_tpu(op: RowOp, params: dict[str, Any], block_rows: int, chip: Chip) -> None:
    rows, cols = params["rows"], params["cols"]
    if block_rows % 8 and block_rows != rows:
        raise InputError(f"expected a multiple of 8 (TPU sublanes) or all {rows} rows, got {block_rows}",
                         field="params.block_rows")
    need = _tpu_local_bytes(op, block_rows, cols, params["dtype"])
    if need > chip.local.capacity_bytes:
        raise InputError(
            f"a [{block_rows}, {cols}] block needs {need} bytes of VMEM (buffers and fp32 scratch); "
            f"{chip.name} has {int(chip.local.capacity_bytes)}",
            field="params.block_rows" if block_rows > 8 else "params.cols",
        )


# ---------------------------------------------------------------- building


def _metadata(op: RowOp, params, config) -> dict[str, Any]:
    return {"family": op.name, "params": dict(params), "config": dict(config), "generator": "accelsim.families.rowwise"}


def _kernel_name(op: RowOp, params) -> str:
    return f"{op.name}_{params['dtype']}_{params['rows']}x{params['cols']}"


def _tensors(op: RowOp, rows: int, cols: int, dtype: str, weights: str | None = None) -> dict[str, dict]:
    tensors = {"X": {"shape": [rows, cols], "dtype": dtype}, "Y": {"shape": [rows, cols], "dtype": dtype}}
    tensors.update({w: {"shape": [cols], "dtype": weights or dtype} for w in op.weights})
    tensors.update({s: {"shape": [rows], "dtype": "fp32"} for s in op.stats})
    return tensors


def _work(flops: float, special: float) -> list[Compute]:
    out = [Compute(unit="vector", flops=float(flops), dtype="fp32")]
    if special:
        out.append(Compute(unit="special", flops=float(special), dtype="fp32"))
    return out


def row_compute(op: RowOp, rows: int, cols: int) -> list[Compute]:
    """One-pass compute of ``rows`` whole rows (valid rows only: flops are useful work)."""
    elements = rows * cols
    return _work(op.flops_per_element * elements + op.flops_per_row * rows,
                 op.exps_per_element * elements + op.rsqrt_per_row * rows)


# ---------------------------------------------------------------- GPU


def triton_build(op: RowOp, params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    """The Triton kernel (this repository's, Liger's): on TPUs the Pallas kernel."""
    return _build_tpu(op, params, config) if isinstance(chip, TpuChip) else _build_gpu(op, params, config, chip)


def _build_gpu(op: RowOp, params: dict[str, Any], config: dict[str, Any], chip: Chip) -> KernelTrace:
    rows, cols, dtype = params["rows"], params["cols"], params["dtype"]
    weights = weight_dtype(params)
    layout = gpu_layout(op, params, config, chip)
    programs = math.ceil(rows / layout.block_rows)
    check_programs(programs)
    if layout.chunk_cols is None:
        tail = rows - (programs - 1) * layout.block_rows
        templates = [_gpu_one_pass(op, "full", layout.block_rows, cols, dtype, weights)] if programs > 1 else []
        if tail != layout.block_rows or programs == 1:
            templates.append(_gpu_one_pass(op, "tail", tail, cols, dtype, weights))
    else:
        templates = [gpu_two_pass(op, cols, layout.chunk_cols, dtype, weights)]
    program_template = None
    if len(templates) > 1:
        program_template = [0] * (programs - 1) + [1]
    reduction_scratch = config["num_warps"] * layout.block_rows * FP32_BYTES  # cross-warp tl.sum / tl.max
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {
            "name": _kernel_name(op, params),
            "grid": [programs],
            "resources": {"local_memory_bytes": reduction_scratch, "warps": config["num_warps"],
                          "registers_per_thread": layout.registers_per_thread},
            # One pass: no loop to pipeline, loads then compute then stores. Two passes: one
            # chunk's loads in flight while the previous chunk computes.
            "pipeline_depth": 1 if layout.chunk_cols is None else 2,
        },
        "tensors": _tensors(op, rows, cols, dtype, weights),
        "templates": [t.model_dump() for t in templates],
        "program_template": program_template,
        "metadata": _metadata(op, params, config),
    })


def _gpu_one_pass(op: RowOp, name: str, rows: int, cols: int, dtype: str, weights: str) -> Template:
    size = DTYPE_BYTES[dtype]
    row_bytes = int(rows * cols * size)
    transfers = [Transfer(tensor="X", block=["p0", 0], bytes=row_bytes)]
    transfers += [Transfer(tensor=w, block=[0], bytes=int(cols * DTYPE_BYTES[weights])) for w in op.weights]
    transfers.append(Transfer(tensor="Y", block=["p0", 0], bytes=row_bytes, direction="write"))
    transfers += [Transfer(tensor=s, block=["p0"], bytes=rows * STAT_BYTES, direction="write") for s in op.stats]
    return Template(name=name, steps=[Step(transfers=transfers, compute=row_compute(op, rows, cols))])


def _chunks(cols: int, chunk: int) -> list[tuple[int | str, int, int]]:
    """(block index, repeat, width) of the column loop: full chunks, then the remainder."""
    full, rest = divmod(cols, chunk)
    out: list[tuple[int | str, int, int]] = [("c", full, chunk)] if full else []
    if rest:
        out.append((full, 1, rest))
    return out


def gpu_two_pass(op: RowOp, cols: int, chunk: int, dtype: str, weights: str) -> Template:
    """One row per program, a statistics pass then an apply pass over ``chunk``-column blocks
    of the row (each reads the row's block again; the L2 may serve the second read)."""
    size = DTYPE_BYTES[dtype]
    steps = []
    for index, repeat, width in _chunks(cols, chunk):
        steps.append(Step(
            repeat=repeat, loop_var="c" if index == "c" else None,
            transfers=[Transfer(tensor="X", block=["p0", index], bytes=int(width * size))],
            compute=_work(op.stats_flops_per_element * width, op.stats_exps_per_element * width),
        ))
    if op.stats or op.two_pass_flops_per_row:
        steps.append(Step(
            transfers=[Transfer(tensor=s, block=["p0"], bytes=STAT_BYTES, direction="write") for s in op.stats],
            compute=_work(op.two_pass_flops_per_row, op.rsqrt_per_row),
        ))
    for index, repeat, width in _chunks(cols, chunk):
        block_bytes = int(width * size)
        transfers = [Transfer(tensor="X", block=["p0", index], bytes=block_bytes)]
        transfers += [Transfer(tensor=w, block=[index], bytes=int(width * DTYPE_BYTES[weights])) for w in op.weights]
        transfers.append(Transfer(tensor="Y", block=["p0", index], bytes=block_bytes, direction="write"))
        steps.append(Step(
            repeat=repeat, loop_var="c" if index == "c" else None, transfers=transfers,
            compute=_work(op.apply_flops_per_element * width, op.apply_exps_per_element * width),
        ))
    return Template(name="row", steps=steps)


# ---------------------------------------------------------------- TPU


def _tpu_local_bytes(op: RowOp, block_rows: int, cols: int, dtype: str) -> int:
    """Double-buffered input, output, parameter and statistics blocks, plus the fp32 scratch
    the block is upcast into."""
    size = DTYPE_BYTES[dtype]
    buffers = 2 * block_rows * cols * size + len(op.weights) * cols * size + len(op.stats) * block_rows * STAT_BYTES
    return int(2 * buffers + block_rows * cols * FP32_BYTES)


def _build_tpu(op: RowOp, params: dict[str, Any], config: dict[str, Any]) -> KernelTrace:
    rows, cols, dtype = params["rows"], params["cols"], params["dtype"]
    size = DTYPE_BYTES[dtype]
    block_rows = config["block_rows"]
    steps = math.ceil(rows / block_rows)
    check_programs(steps)
    i = np.arange(steps)
    zero = np.zeros(steps, dtype=np.int64)
    valid = np.where(i == steps - 1, rows - (steps - 1) * block_rows, block_rows)
    operands = [Operand("X", "read", (i, zero), valid * cols * size)]
    weights = weight_dtype(params)
    operands += [Operand(w, "read", (zero,), np.full(steps, cols * DTYPE_BYTES[weights])) for w in op.weights]
    operands.append(Operand("Y", "write", (i, zero), valid * cols * size))
    operands += [Operand(s, "write", (i,), valid * STAT_BYTES) for s in op.stats]
    return pallas_trace(
        name=_kernel_name(op, params),
        grid=[steps],
        dimension_semantics=["parallel"],
        operands=operands,
        compute=lambda sel: row_compute(op, int(valid[sel][0]), cols),
        compute_key=valid,
        tensors=_tensors(op, rows, cols, dtype, weights),
        local_memory_bytes=_tpu_local_bytes(op, block_rows, cols, dtype),
        buffer_count=2,
        metadata=_metadata(op, params, config),
    )


def implementation(op: RowOp, params: dict[str, Any], chip: Chip):
    """The :class:`~accelsim.families.norm_impls.base.NormImpl` that ``params["impl"]`` names
    (``default``: the Triton kernel; softmax has only that one; TPUs run the Pallas kernel)."""
    from accelsim.families.norm_impls import liger, torch, triton  # they build on this module

    name = params.get("impl", "default")
    if isinstance(chip, TpuChip) and name not in ("default", "triton"):
        raise InputError(f"{chip.name} runs the Pallas kernel; impl={name} is a GPU implementation",
                         field="params.impl")
    return {"default": triton.IMPL, "triton": triton.IMPL, "liger": liger.IMPL, "torch": torch.IMPL}[name]


def _family(op: RowOp) -> Family:
    if op.name not in NORM_IMPLS:
        return Family(
            name=op.name, description=op.description, params=PARAMS, config_params=CONFIG,
            default_config=partial(default_config, op), config_space=partial(config_space, op),
            build=partial(triton_build, op), check=partial(check, op), gpu_only=("num_warps",),
        )
    return Family(
        name=op.name,
        description=op.description,
        params=norm_params(op.name),
        config_params=CONFIG,
        default_config=lambda params, chip: implementation(op, params, chip).default_config(op, params, chip),
        config_space=lambda params, chip: implementation(op, params, chip).config_space(op, params, chip),
        build=lambda params, config, chip: implementation(op, params, chip).build(op, params, config, chip),
        check=lambda params, config, chip: implementation(op, params, chip).check(op, params, config, chip),
        compiled_by_triton=lambda params, chip: implementation(op, params, chip).name != "torch",
        gpu_only=("num_warps",),
    )


SOFTMAX = _family(SOFTMAX_OP)
LAYERNORM = _family(LAYERNORM_OP)
RMSNORM = _family(RMSNORM_OP)
FAMILIES = (SOFTMAX, LAYERNORM, RMSNORM)
