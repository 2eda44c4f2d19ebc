"""``impl=torch``: PyTorch eager's norm kernels on CUDA.

**LayerNorm** (``torch.nn.LayerNorm``, ``F.layer_norm``; pytorch/pytorch
``aten/src/ATen/native/cuda/layer_norm_kernel.cu``, read at 0005c538,
``LayerNormKernelImplInternal``). Where the row is a multiple of 4 elements and the tensors are
16-byte aligned (every contiguous tensor the allocator gives) it launches
``vectorized_layer_norm_kernel``: one block per row (``blocks(M)``) of ``num_threads()`` = 4
warps (``thread_constants.h``: ``C10_WARP_SIZE * 4``), each thread loading ``vec_size`` = 4
elements at a time (whatever the dtype). The row is read **twice**: ``compute_stats`` walks it
for Welford's mean and variance (per element a subtraction, a count, a reciprocal of the
count, two fused multiply-adds: 7 fp32 flops and one reciprocal on the special-function
unit), the block combines the warps' partial statistics through shared memory
(``threads.y * 3/2`` floats), then the apply loop reads the row again with the weight and
bias and writes the output (4 flops per element) and the row's mean and rstd. Whether the
second read comes from the L2 or from HBM is the engine's reuse model's call: the rows the
resident blocks hold between a row's two reads (132 SMs x 16 blocks of 64 KB at 16K fp32
columns: 138 MB) outgrow the 50 MB L2 from a few thousand columns up. Otherwise (a row not
a multiple of 4) it launches ``RowwiseMomentsCUDAKernel`` (512 threads per row, Welford
over the row, mean and rstd written) then ``LayerNormForwardCUDAKernel`` (256 threads per
row, the row read again with the weights and the statistics, the output written): two
kernels, two launches.

**RMSNorm** (rmsnorm): PyTorch's eager composite, one kernel per op, as Hugging Face's
``LlamaRMSNorm`` writes it (``x.to(float32)``, ``.pow(2).mean(-1, keepdim=True)``,
``x * torch.rsqrt(variance + eps)``, ``.to(input_dtype)``, ``weight * x``) and as
``torch.nn.functional.rms_norm`` ran before PyTorch fused it into one CUDA kernel (the
fused kernel of recent releases is not modelled). Elementwise ops run PyTorch's vectorized
elementwise launch (128 threads, 4 elements each: 512 elements per block); ``mean`` is a
row reduction (one block of 512 threads per row, 4 elements per thread per step). A cast to
the dtype the input already has is no kernel. A weight kept in fp32 under bf16 activations
(the benchmarks' modules) promotes the product to fp32: the last kernel writes 4 bytes per
element.

Left out: the CPU side of a call (dispatch, autograd bookkeeping, the allocator), which a
timing that launches one call at a time also measures; the compiled register counts (32 per
thread is an estimate for the vectorized kernel: it keeps four elements and Welford's three
numbers; 16 blocks of 4 warps fit an SM either way).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from accelsim.arch.model import Chip, TpuChip
from accelsim.errors import InputError
from accelsim.families import rowwise
from accelsim.families.norm_impls.base import Config, NormImpl, Params, fixed_launch
from accelsim.families.rowwise import FP32_BYTES, STAT_BYTES, RowOp
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace, check_programs

VEC_ELEMENTS = 4
"""``vec_size`` in ``layer_norm_kernel.cu``: elements per load, every dtype."""
LAYERNORM_WARPS = 4
"""``num_threads() / warp_size``: the vectorized kernel's 128 threads per row."""
MOMENTS_WARPS = 16
"""``cuda_utils::kCUDABlockReduceNumThreads`` (512): ``RowwiseMomentsCUDAKernel``'s block."""
FORWARD_WARPS = 8
"""``kCUDANumThreads`` (256): ``LayerNormForwardCUDAKernel``'s block."""
REGISTERS = 32
"""Registers per thread of the vectorized kernel (an estimate; see the module docstring)."""
ELEMENTWISE_WARPS = 4
ELEMENTWISE_PER_PROGRAM = 512
"""PyTorch's vectorized elementwise launch: 128 threads, 4 elements each."""
REDUCE_WARPS = 16
"""The row reduction behind ``mean(-1)``: one block of 512 threads per row."""

WELFORD_LAYERNORM = dataclasses.replace(
    rowwise.LAYERNORM_OP,
    stats_flops_per_element=7, stats_exps_per_element=1,
    apply_flops_per_element=4, apply_exps_per_element=0, two_pass_flops_per_row=2,
)
"""LayerNorm as the vectorized kernel computes it: Welford's online update per element (7 fp32
flops and the reciprocal of the count), then ``gamma * (rstd * (x - mean)) + beta``."""


def default_config(op: RowOp, params: Params, chip: Chip) -> Config:
    warps = LAYERNORM_WARPS if op.name == "layernorm" else ELEMENTWISE_WARPS
    return {"block_rows": 1, "num_warps": warps}


def check(op: RowOp, params: Params, config: Config, chip: Chip) -> None:
    if isinstance(chip, TpuChip):
        raise InputError(f"{chip.name} runs the Pallas kernel; impl=torch is PyTorch's CUDA kernels",
                         field="params.impl")
    fixed_launch("torch", config, default_config(op, params, chip))


def build(op: RowOp, params: Params, config: Config, chip: Chip) -> KernelTrace:
    if op.name == "layernorm":
        if params["cols"] % VEC_ELEMENTS == 0:
            return _vectorized_layernorm(params)
        return _two_kernel_layernorm(params)
    return _composite_rmsnorm(params)


def _metadata(op_name: str, params: Params, config: Config) -> dict:
    return {"family": op_name, "params": dict(params), "config": dict(config), "generator": __name__}


def _vectorized_layernorm(params: Params) -> KernelTrace:
    rows, cols, dtype = params["rows"], params["cols"], params["dtype"]
    check_programs(rows)
    template = rowwise.gpu_two_pass(WELFORD_LAYERNORM, cols, LAYERNORM_WARPS * 32 * VEC_ELEMENTS, dtype,
                                    rowwise.weight_dtype(params))
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": f"vectorized_layer_norm_kernel_{dtype}_{rows}x{cols}", "grid": [rows],
                   "resources": {"local_memory_bytes": LAYERNORM_WARPS * 3 // 2 * FP32_BYTES,
                                 "warps": LAYERNORM_WARPS, "registers_per_thread": REGISTERS},
                   "pipeline_depth": 2},
        "tensors": _norm_tensors(rowwise.LAYERNORM_OP, params),
        "templates": [template.model_dump()],
        "metadata": _metadata("layernorm", params, default_config(rowwise.LAYERNORM_OP, params, None)),
    })


def _norm_tensors(op: RowOp, params: Params) -> dict[str, dict]:
    rows, cols, dtype = params["rows"], params["cols"], params["dtype"]
    tensors = {"X": {"shape": [rows, cols], "dtype": dtype}, "Y": {"shape": [rows, cols], "dtype": dtype}}
    tensors.update({w: {"shape": [cols], "dtype": rowwise.weight_dtype(params)} for w in op.weights})
    tensors.update({s: {"shape": [rows], "dtype": "fp32"} for s in op.stats})
    return tensors


def _chunk_steps(cols: int, chunk: int, transfers, compute) -> list[dict]:
    """A loop over a row in ``chunk``-column blocks (full blocks, then the remainder):
    ``transfers(index, width)`` and ``compute(width)`` give each block's."""
    steps = []
    full, rest = divmod(cols, chunk)
    for index, repeat, width in ((("c", full, chunk),) if full else ()) + (((full, 1, rest),) if rest else ()):
        steps.append({"repeat": repeat, **({"loop_var": "c"} if index == "c" else {}),
                      "transfers": transfers(index, width), "compute": compute(width)})
    return steps


def _two_kernel_layernorm(params: Params) -> KernelTrace:
    """``RowwiseMomentsCUDAKernel`` then ``LayerNormForwardCUDAKernel``, each one block per row."""
    rows, cols, dtype = params["rows"], params["cols"], params["dtype"]
    check_programs(2 * rows)
    size, weight_size = DTYPE_BYTES[dtype], DTYPE_BYTES[rowwise.weight_dtype(params)]
    op = WELFORD_LAYERNORM

    def work(flops: float, special: float = 0.0) -> list[dict]:
        out = [{"unit": "vector", "flops": float(flops), "dtype": "fp32"}]
        return out + ([{"unit": "special", "flops": float(special), "dtype": "fp32"}] if special else [])

    moments = _chunk_steps(cols, MOMENTS_WARPS * 32, lambda i, w: [
        {"tensor": "X", "block": ["row", i], "bytes": w * size}],
        lambda w: work(op.stats_flops_per_element * w, op.stats_exps_per_element * w))
    moments.append({"transfers": [{"tensor": s, "block": ["row"], "bytes": STAT_BYTES, "direction": "write"}
                                  for s in op.stats], "compute": work(op.two_pass_flops_per_row, op.rsqrt_per_row)})
    apply = [{"transfers": [{"tensor": s, "block": ["row"], "bytes": STAT_BYTES} for s in op.stats]}]
    apply += _chunk_steps(cols, FORWARD_WARPS * 32, lambda i, w: [
        {"tensor": "X", "block": ["row", i], "bytes": w * size},
        *({"tensor": t, "block": [i], "bytes": w * weight_size} for t in op.weights),
        {"tensor": "Y", "block": ["row", i], "bytes": w * size, "direction": "write"}],
        lambda w: work(op.apply_flops_per_element * w))
    return KernelTrace.model_validate({
        "schema_version": 1,
        "kernel": {"name": f"layer_norm_{dtype}_{rows}x{cols}", "grid": [2 * rows],
                   "resources": {"warps": MOMENTS_WARPS, "local_memory_bytes": 32 * 3 * FP32_BYTES,
                                 "registers_per_thread": REGISTERS},
                   "pipeline_depth": 2, "kernel_starts": [rows],
                   "kernel_resources": [{"warps": FORWARD_WARPS, "registers_per_thread": REGISTERS}]},
        "tensors": _norm_tensors(rowwise.LAYERNORM_OP, params),
        "templates": [{"name": "moments", "steps": moments}, {"name": "forward", "steps": apply}],
        "program_template": [0] * rows + [1] * rows,
        "program_vars": {"row": list(range(rows)) * 2},
        "metadata": _metadata("layernorm", params, default_config(rowwise.LAYERNORM_OP, params, None)),
    })


class _Launches:
    """Kernels appended one after another into one trace (``kernel_starts``), each a grid of
    programs with its own program variables (``item``: the program's index in its kernel)."""

    def __init__(self) -> None:
        self.templates: list[dict] = []
        self.variables: list[dict[str, np.ndarray]] = []
        self.resources: list[dict] = []
        self.tensors: dict[str, dict] = {}

    def tensor(self, name: str, dtype: str, shape: list[int]) -> str:
        self.tensors[name] = {"shape": shape, "dtype": dtype}
        return name

    def add(self, name: str, steps: list[dict], programs: int, warps: int,
            variables: dict[str, np.ndarray] | None = None) -> None:
        self.templates.append({"name": f"k{len(self.templates)}_{name}", "steps": steps})
        self.variables.append({"item": np.arange(programs), **(variables or {})})
        self.resources.append({"warps": warps})

    def trace(self, name: str, metadata: dict) -> KernelTrace:
        counts = [len(v["item"]) for v in self.variables]
        check_programs(sum(counts))
        names = sorted({n for v in self.variables for n in v})
        program_vars = {n: np.concatenate([v.get(n, np.zeros(c, dtype=np.int64)) for v, c in zip(self.variables, counts)])
                        .tolist() for n in names}
        starts = np.cumsum(counts)[:-1].tolist()
        return KernelTrace.model_validate({
            "schema_version": 1,
            "kernel": {"name": name, "grid": [sum(counts)], "resources": self.resources[0], "pipeline_depth": 2,
                       **({"kernel_starts": starts, "kernel_resources": self.resources[1:]} if starts else {})},
            "tensors": self.tensors,
            "templates": self.templates,
            "program_template": np.repeat(np.arange(len(counts)), counts).tolist(),
            "program_vars": program_vars,
            "metadata": metadata,
        })


def _composite_rmsnorm(params: Params) -> KernelTrace:
    """Hugging Face's ``LlamaRMSNorm`` forward as PyTorch eager runs it, one kernel per op."""
    rows, cols, dtype = params["rows"], params["cols"], params["dtype"]
    weights = rowwise.weight_dtype(params)
    per = ELEMENTWISE_PER_PROGRAM
    programs = math.ceil(rows * cols / per)
    first = np.arange(programs) * per  # each elementwise program's first element
    stat_blocks = math.ceil(rows / per)
    ks = _Launches()

    def elementwise(name: str, reads: list[tuple[str, str]], write: tuple[str, str], flops: float,
                    broadcast: tuple[dict, ...] = (), variables: dict[str, np.ndarray] | None = None) -> None:
        """``programs`` blocks of ``per`` elements: each read and the write move ``per`` elements."""
        for t, d in (*reads, write):
            ks.tensor(t, d, [programs, per])
        transfers = [{"tensor": t, "block": ["item"], "bytes": per * DTYPE_BYTES[d]} for t, d in reads]
        transfers += list(broadcast)
        transfers.append({"tensor": write[0], "block": ["item"], "bytes": per * DTYPE_BYTES[write[1]],
                          "direction": "write"})
        work = [{"unit": "vector", "flops": float(flops * per), "dtype": "fp32"}] if flops else []
        ks.add(name, [{"transfers": transfers, "compute": work}], programs, ELEMENTWISE_WARPS, variables)

    def statistics(name: str, read: str, write: str, special: bool) -> None:
        """A tiny elementwise op over the rows' statistics (``variance + eps``, ``rsqrt``)."""
        for t in (read, write):
            ks.tensor(t, "fp32", [stat_blocks, per])
        work = [{"unit": "special" if special else "vector", "flops": float(per), "dtype": "fp32"}]
        ks.add(name, [{"transfers": [{"tensor": read, "block": ["item"], "bytes": per * FP32_BYTES},
                                     {"tensor": write, "block": ["item"], "bytes": per * FP32_BYTES,
                                      "direction": "write"}], "compute": work}], stat_blocks, ELEMENTWISE_WARPS)

    x32 = "X" if dtype == "fp32" else "X32"
    if dtype != "fp32":
        elementwise("to_float32", [("X", dtype)], (x32, "fp32"), 0.0)
    elementwise("pow", [(x32, "fp32")], ("X2", "fp32"), 1.0)
    reduce = _chunk_steps(cols, REDUCE_WARPS * 32 * VEC_ELEMENTS,
                          lambda i, w: [{"tensor": "X2", "block": ["row", i], "bytes": w * FP32_BYTES}],
                          lambda w: [{"unit": "vector", "flops": float(w), "dtype": "fp32"}])
    reduce.append({"transfers": [{"tensor": ks.tensor("variance", "fp32", [stat_blocks, per]),
                                  "block": ["stat_block"], "bytes": FP32_BYTES, "direction": "write"}],
                   "compute": [{"unit": "vector", "flops": 1.0, "dtype": "fp32"}]})
    ks.add("mean", reduce, rows, REDUCE_WARPS, {"row": np.arange(rows), "stat_block": np.arange(rows) // per})
    ks.tensors["X2"]["shape"] = [rows, math.ceil(cols / (REDUCE_WARPS * 32 * VEC_ELEMENTS)) * REDUCE_WARPS * 32 * VEC_ELEMENTS]
    statistics("add_eps", "variance", "variance_eps", special=False)
    statistics("rsqrt", "variance_eps", "rstd", special=True)
    rows_per_program = max(1, math.ceil(per / cols))
    rstd_read = {"tensor": "rstd", "block": ["stat_block"], "bytes": min(per, rows_per_program) * FP32_BYTES}
    elementwise("mul_rstd", [(x32, "fp32")], ("H", "fp32"), 1.0, (rstd_read,),
                {"stat_block": np.minimum(first // cols, rows - 1) // per})
    h = "H"
    if dtype != "fp32":
        elementwise("to_input_dtype", [("H", "fp32")], ("H_cast", dtype), 0.0)
        h = "H_cast"
    out_dtype = "fp32" if "fp32" in (weights, dtype) else dtype
    weight_block = min(per, cols)
    weight_read = {"tensor": "W", "block": ["column_block"], "bytes": weight_block * DTYPE_BYTES[weights]}
    elementwise("mul_weight", [(h, dtype)], ("Y", out_dtype), 1.0, (weight_read,),
                {"column_block": (first % cols) // weight_block})
    ks.tensor("W", weights, [math.ceil(cols / weight_block), weight_block])
    return ks.trace(f"rms_norm_composite_{dtype}_{rows}x{cols}",
                    _metadata("rmsnorm", params, default_config(rowwise.RMSNORM_OP, params, None)))


IMPL = NormImpl(
    name="torch",
    default_config=default_config,
    config_space=lambda op, params, chip: [default_config(op, params, chip)],
    build=lambda op, params, config, chip: build(op, params, config, chip),
    check=check,
)
