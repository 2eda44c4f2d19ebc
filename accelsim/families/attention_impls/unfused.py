"""``unfused``: PyTorch eager attention, each op its own kernel, as the FlashAttention
benchmarks' ``attention_pytorch`` (flash-attention ``benchmarks/benchmark_flash_attention.py``,
``hopper/benchmark_flash_attention.py``) runs it and the FlashAttention-3 paper times it as
"Standard attention".

Forward kernels: the rearranges of Q and K into (batch*heads, seq, head_dim) and
(batch*heads, head_dim, seq) copies (the inputs come packed as (batch, seq, 3, heads,
head_dim)); ``baddbmm`` (S = scale * Q K^T, written to HBM in the input dtype); when causal,
the mask built at each call (``full``, ``triu``, the cast to the input dtype) and added to S
(the ``seq_q x seq_kv`` mask is read again for every head, from L2 while it fits); the row
softmax (S read, P written); V's rearrange copy (``einsum``'s reshape of its permuted
operand); ``bmm`` (O = P V). Backward (autograd of the same ops, the forward not included, as
a backward benchmark times it): dP = dO V^T and dV = P^T dO, the softmax backward as ATen runs
it (``softmax_backward_cuda_out``: an elementwise ``grad * output`` kernel, then the row kernel
reading that product and P, writing dS), dQ = dS K and dK = dS^T Q, each multiplied by the
softmax scale (``baddbmm``'s alpha: ``maybe_multiply`` in autograd's ``derivatives.yaml``, an
out-of-place elementwise kernel), and the three gradients copied into the packed layout.

How ATen launches them (pytorch/pytorch ``aten/src/ATen/native/cuda``): an elementwise kernel
whose operands are all contiguous is the vectorized one (128 threads, 4 elements each, all
loads in flight); one with a strided operand (every rearrange copy, the broadcast mask add) is
``launch_legacy_kernel`` (``CUDALoops.cuh``), whose threads take their 4 elements one after
another (:func:`_parts`). K's copy and dK's copy read across the source's fastest axis,
one 32-byte sector per element (:func:`_transposed_copy`). The softmax's launch follows
``SoftMax.cu`` (:func:`softmax_launch`): a warp per row up to 1024 elements, else a block of up
to 1024 threads per row. Each GEMM is a cuBLAS-style tiled kernel (128x128 output tiles,
64-deep k-steps, MMAs not chained, 8 warps, 4 stages). fp8 runs as bf16 here (eager PyTorch
has no fp8 bmm). Leaves out: dropout (the benchmark's p = 0 returns its input), cuBLAS's own
tile choice (128x128 assumed), the per-element index arithmetic of the strided loop, the
allocator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.arch.model import Chip
from accelsim.families.attention_impls.base import Impl, Launches, gpu_only
from accelsim.trace.kernel import DTYPE_BYTES, KernelTrace

TILE = 128
K_STEP = 64
GEMM_WARPS = 8
GEMM_STAGES = 4
ELEMENTS_PER_PROGRAM = 512
ROW_WARPS = 4
"""Warps of an elementwise kernel's block (ATen's ``num_threads()``: 128)."""
LEGACY_UNROLL = 4
"""``launch_legacy_kernel<128, 4>``: elements per thread of ATen's strided loop for 2-byte outputs
(``unroll_factor``, 2 for 4-byte ones)."""
PERSISTENT_SOFTMAX_WARPS = 4
"""``persistent_softmax.cuh``: 128 threads per block, a warp per row."""
MAX_THREADS = 1024
"""``max_threads`` in ATen's ``SoftMax.cu``."""
WARP_THREADS = 32
VECTOR_BYTES = 16
"""ATen softmax's ILP: the elements of one 16-byte vector load."""
SECTOR_BYTES = 32
"""The unit a warp's global loads are served in (CUDA C++ Best Practices Guide, "Coalesced Access to
Global Memory", compute capability 6.0 and later: a warp's accesses coalesce into as many 32-byte
transactions as they touch)."""


def _bmm(ks: Launches, name: str, a: str, b: str, c: str, batch: int, m: int, n: int, k: int, dtype: str) -> None:
    """C[batch] = A[batch] (m x k) @ B[batch] (k x n) in 128x128 output tiles."""
    size = DTYPE_BYTES[dtype]
    bm, bn, bk = min(TILE, m), min(TILE, n), min(K_STEP, k)
    tm, tn, steps = math.ceil(m / bm), math.ceil(n / bn), math.ceil(k / bk)
    programs = batch * tm * tn
    useful = 2.0 * m * n * k / (tm * tn * steps)  # an even share of the useful flops per k-step
    for tensor, elements in ((a, batch * m * k), (b, batch * k * n), (c, batch * m * n)):
        ks.tensor(tensor, elements, dtype)
    pid = np.arange(programs)
    tile = (pid // tn % tm) * tn + pid % tn
    batch_of = pid // (tm * tn)
    ks.add({"name": name, "steps": [
        {"repeat": steps, "loop_var": "kk", "transfers": [
            {"tensor": a, "block": ["a_block+kk"], "bytes": bm * bk * size},
            {"tensor": b, "block": ["b_block+kk"], "bytes": bk * bn * size}],
         "compute": [{"unit": "matrix", "flops": useful, "dtype": dtype, "shape": [bm, bn, bk]}], "chained": False},
        {"transfers": [{"tensor": c, "block": ["c_block"], "bytes": bm * bn * size, "direction": "write"}]},
    ]}, programs, {"a_block": (batch_of * tm + pid // tn % tm) * steps, "b_block": (batch_of * tn + pid % tn) * steps,
                   "c_block": batch_of * tm * tn + tile},
        {"warps": GEMM_WARPS, "local_memory_bytes": GEMM_STAGES * (bm * bk + bk * bn) * size,
         "registers_per_thread": 168})


def _elementwise(ks: Launches, name: str, inputs: list[tuple[str, str]], outputs: list[tuple[str, str]],
                 elements: int, flops_per_element: float = 0.0, broadcast: tuple[str, str, int] | None = None,
                 strided: bool = False) -> None:
    """One pass over ``elements``: each input (tensor, dtype) read and each output written once.
    ``broadcast`` (tensor, dtype, its elements): one more input, smaller, that every stretch
    of ``elements`` of its size reads again from its start (a mask added to each head's
    scores), so its blocks repeat and the L2 serves them while they fit. ``strided``: an
    operand is not contiguous (a broadcast one, or a copy's permuted source), so ATen runs
    its strided loop (:func:`_parts`) instead of the vectorized kernel."""
    per = ELEMENTS_PER_PROGRAM
    programs = math.ceil(elements / per)
    parts = LEGACY_UNROLL if strided or broadcast is not None else 1
    for tensor, dtype in inputs + outputs:
        ks.tensors[tensor] = {"shape": [programs * parts, per // parts], "dtype": dtype}
    transfers = ([{"tensor": t, "block": ["item+part"], "bytes": per // parts * DTYPE_BYTES[d]} for t, d in inputs]
                 + [{"tensor": t, "block": ["item+part"], "bytes": per // parts * DTYPE_BYTES[d], "direction": "write"}
                    for t, d in outputs])
    variables = {"item": np.arange(programs) * parts}
    if broadcast is not None:
        tensor, dtype, size = broadcast
        blocks = math.ceil(size / per)
        ks.tensors[tensor] = {"shape": [blocks * parts, per // parts], "dtype": dtype}
        transfers.append({"tensor": tensor, "block": ["again+part"], "bytes": per // parts * DTYPE_BYTES[dtype]})
        variables["again"] = np.arange(programs) % blocks * parts
    compute = [{"unit": "vector", "flops": float(flops_per_element * per / parts), "dtype": "fp32"}] if flops_per_element else []
    ks.add({"name": name, "steps": [_parts(parts, transfers, compute)]}, programs, variables, {"warps": ROW_WARPS})


def _parts(parts: int, transfers: list[dict], compute: list[dict]) -> dict:
    """A program's elements as one step, repeated per part (``part``: its index, in block
    indices). One part: the vectorized kernel, every load of a thread in flight at once.
    :data:`LEGACY_UNROLL` parts: ATen's ``launch_legacy_kernel`` (``CUDALoops.cuh``,
    ``gpu_kernel_impl_nocast`` on operands that are not all contiguous), whose threads take
    their elements a block's width apart one after the other, loading, computing and storing
    each through ``char*`` pointers the compiler cannot prove apart, so the next element's
    loads wait for this one's store (ROCm's branch of the same function unrolls them by hand
    to overlap the loads)."""
    step = {"repeat": parts, "loop_var": "part", "transfers": transfers}
    if compute:
        step["compute"] = compute
    return step


def _transposed_copy(ks: Launches, name: str, src: str, dst: str, batch: int, rows: int, cols: int,
                     dtype: str) -> None:
    """A copy that writes ``batch`` contiguous ``[rows, cols]`` matrices from a source whose
    fastest axis is ``rows``: ATen's ``copy_`` walks the output's order (TensorIterator sorts the
    dimensions by the output's strides), so a warp's 32 consecutive elements lie in 32 different
    32-byte sectors of the source, each holding ``32 / dtype bytes`` neighbours along ``rows``
    that the programs of the next rows read again (from the L2: their reuse is close). Each
    part of a program's strided loop (:func:`_parts`) reads one sector per element (per column
    it spans, per group of rows sharing a sector) and writes its elements; a program's parts
    are taken as consecutive sector blocks (exact where ``cols`` is a multiple of
    :data:`ELEMENTS_PER_PROGRAM`, as the attention copies' are)."""
    size = DTYPE_BYTES[dtype]
    per = ELEMENTS_PER_PROGRAM // LEGACY_UNROLL
    programs = math.ceil(batch * rows * cols / ELEMENTS_PER_PROGRAM)
    group = max(1, SECTOR_BYTES // size)
    span_cols = min(cols, per)
    span_rows = max(1, per // cols)
    sector_bytes = span_cols * math.ceil(span_rows / group) * SECTOR_BYTES
    first = np.arange(programs) * ELEMENTS_PER_PROGRAM
    b, r, c = first // (rows * cols), first // cols % rows, first % cols
    chunks = math.ceil(cols / span_cols)
    groups = math.ceil(rows / group)
    ks.tensors[src] = {"shape": [batch * groups * chunks, sector_bytes // size], "dtype": dtype}
    ks.tensors[dst] = {"shape": [programs * LEGACY_UNROLL, per], "dtype": dtype}
    transfers = [{"tensor": src, "block": ["sectors+part"], "bytes": sector_bytes},
                 {"tensor": dst, "block": ["item+part"], "bytes": per * size, "direction": "write"}]
    variables = {"sectors": (b * groups + r // group) * chunks + c // span_cols,
                 "item": np.arange(programs) * LEGACY_UNROLL}
    ks.add({"name": name, "steps": [_parts(LEGACY_UNROLL, transfers, [])]}, programs, variables, {"warps": ROW_WARPS})


def softmax_launch(cols: int, dtype: str, backward: bool) -> tuple[int, int]:
    """(rows per program, warps per program) of ATen's softmax kernel over rows of ``cols``
    (``aten/src/ATen/native/cuda/SoftMax.cu``, ``host_softmax`` and ``host_softmax_backward``
    with the softmax dim last). A row of at most 1024 elements and 4 KB is one warp's
    (``persistent_softmax.cuh``: 128-thread blocks, two rows a warp up to 128 elements). A
    longer row is one block's: the forward's ``SoftMaxForward_getBlockSize`` gives it
    ``min(cols, 1024)`` threads, the backward's ``SoftMax_getBlockSize`` the power of two at or
    above half of ``min(cols / ILP, 1024)``, ILP being the elements of a 16-byte vector."""
    size = DTYPE_BYTES[dtype]
    if cols <= 1024 and cols * size <= 4096:
        rows_per_warp = 2 if _next_pow2(cols) <= 128 else 1
        return PERSISTENT_SOFTMAX_WARPS * rows_per_warp, PERSISTENT_SOFTMAX_WARPS
    if not backward:
        return 1, math.ceil(min(cols, MAX_THREADS) / WARP_THREADS)
    most = min(cols // (VECTOR_BYTES // size), MAX_THREADS) // 2
    return 1, max(WARP_THREADS, _next_pow2(most)) // WARP_THREADS


def _next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def _rows(ks: Launches, name: str, inputs: list[str], output: str, rows: int, cols: int, dtype: str,
          flops_per_element: float, exps: bool, backward: bool) -> None:
    """A softmax row kernel (forward or backward): each program reads its rows, then writes
    them, launched as ATen launches it (:func:`softmax_launch`). A forward row of a block's
    evaluates each exp twice (``cunn_SoftMaxForward``'s sum pass, then its epilogue's
    ``exp(x - max) / sum``); a warp's row keeps its exps in registers."""
    size = DTYPE_BYTES[dtype]
    per, warps = softmax_launch(cols, dtype, backward)
    exps_per_element = 2 if exps and per == 1 else 1
    programs = math.ceil(rows / per)
    for tensor in (*inputs, output):
        ks.tensors[tensor] = {"shape": [programs, per * cols], "dtype": dtype}
    work = [{"unit": "vector", "flops": float(flops_per_element * per * cols), "dtype": "fp32"}]
    if exps:
        work.append({"unit": "special", "flops": float(exps_per_element * per * cols), "dtype": "fp32"})
    ks.add({"name": name, "steps": [
        {"transfers": [{"tensor": t, "block": ["item"], "bytes": per * cols * size} for t in inputs], "compute": work},
        {"transfers": [{"tensor": output, "block": ["item"], "bytes": per * cols * size, "direction": "write"}]},
    ]}, programs, {"item": np.arange(programs)}, {"warps": warps})


def _forward(ks: Launches, p: dict[str, Any], bh: int, sq: int, skv: int, d: int, qd: int, kd: int, scores: int,
             dtype: str) -> None:
    _elementwise(ks, "copy_q", [("Q_in", dtype)], [("Q", dtype)], qd, strided=True)
    _transposed_copy(ks, "copy_k", "K_in", "Kt", bh, d, skv, dtype)
    _bmm(ks, "baddbmm_qk", "Q", "Kt", "S", bh, sq, skv, d, dtype)
    if p["causal"]:
        _elementwise(ks, "mask_full", [], [("mask32", "fp32")], sq * skv)
        _elementwise(ks, "mask_triu", [("mask32", "fp32")], [("mask32u", "fp32")], sq * skv)
        _elementwise(ks, "mask_cast", [("mask32u", "fp32")], [("mask", dtype)], sq * skv)
        _elementwise(ks, "mask_add", [("S", dtype)], [("S", dtype)], scores, 1.0, broadcast=("mask", dtype, sq * skv))
    _rows(ks, "softmax", ["S"], "P", bh * sq, skv, dtype, 4.0, exps=True, backward=False)
    _elementwise(ks, "copy_v", [("V_in", dtype)], [("V", dtype)], kd, strided=True)
    _bmm(ks, "bmm_pv", "P", "V", "O", bh, sq, d, skv, dtype)


def _backward(ks: Launches, b: int, h: int, sq: int, skv: int, d: int, dtype: str) -> None:
    """Autograd's kernels for the forward's ops (the forward itself is not part of a backward call).
    dO needs no copy: the benchmark's ``randn_like`` keeps the output's strides, those of the
    ``bmm`` result that ``einsum`` permuted, so its backward views it as the ``bmm``'s layout."""
    bh, qd, kd = b * h, b * h * sq * d, b * h * skv * d
    _bmm(ks, "bmm_dp", "dO", "Vt", "dP", bh, sq, skv, d, dtype)
    _bmm(ks, "bmm_dv", "Pt", "dO", "dV", bh, skv, d, sq, dtype)
    # softmax_backward_cuda_out computes grad * output first, then its row kernel
    _elementwise(ks, "softmax_grad_mul", [("dP", dtype), ("P", dtype)], [("dPP", dtype)], bh * sq * skv, 1.0)
    _rows(ks, "softmax_backward", ["dPP", "P"], "dS", bh * sq, skv, dtype, 2.0, exps=False, backward=True)
    _bmm(ks, "bmm_dq", "dS", "K", "dQs", bh, sq, d, skv, dtype)
    _bmm(ks, "bmm_dk", "dSt", "Q", "dKs", bh, skv, d, sq, dtype)
    # baddbmm's alpha (the softmax scale): autograd multiplies each product by it, out of place
    _elementwise(ks, "scale_dq", [("dQs", dtype)], [("dQ", dtype)], qd, 1.0)
    _elementwise(ks, "scale_dk", [("dKs", dtype)], [("dK", dtype)], kd, 1.0)
    # unbind's backward stacks the three into the packed layout; dK is (b h) d s, the layout of
    # baddbmm's K operand, so its copy reads across the sequence
    _elementwise(ks, "copy_dq", [("dQ", dtype)], [("dQ_packed", dtype)], qd, strided=True)
    _transposed_copy(ks, "copy_dk", "dK", "dK_packed", b, skv, h * d, dtype)
    _elementwise(ks, "copy_dv", [("dV", dtype)], [("dV_packed", dtype)], kd, strided=True)


def build(p: dict[str, Any], params: dict[str, Any], chip: Chip) -> KernelTrace:
    b, h, sq, skv, d = p["batch"], p["heads"], p["seq_q"], p["seq_kv"], p["head_dim"]
    dtype = "bf16" if p["dtype"] == "fp8" else p["dtype"]
    bh, qd, kd, scores = b * h, b * h * sq * d, b * h * skv * d, b * h * sq * skv
    ks = Launches()
    if p["backward"]:
        _backward(ks, b, h, sq, skv, d, dtype)
    else:
        _forward(ks, p, bh, sq, skv, d, qd, kd, scores, dtype)
    direction = "bwd" if p["backward"] else "fwd"
    name = f"attention_unfused_{direction}_{dtype}_b{b}_h{h}_s{sq}_d{d}" + ("_causal" if p["causal"] else "")
    return ks.trace(name, {"family": "attention", "params": dict(params), "config": {},
                           "generator": "accelsim.families.attention_impls.unfused"})


def default_config(p: dict[str, Any], chip: Chip) -> dict[str, int]:
    """No tunables: the launch is the ops'. The family's config fields are kept for its checks."""
    return {"block_m": TILE, "block_n": TILE, "num_stages": GEMM_STAGES, "num_warps": GEMM_WARPS, "split_kv": 1}


IMPL = Impl(
    name="unfused",
    summary="PyTorch eager attention: bmm, mask, softmax, bmm kernels (and autograd's backward ones)",
    unavailable=gpu_only,
    default_config=default_config,
    build=build,
)
