"""``unfused``: PyTorch eager attention, each op its own kernel, as the FlashAttention
benchmarks' ``attention_pytorch`` (flash-attention ``benchmarks/benchmark_flash_attention.py``)
runs it and the FlashAttention-3 paper times it as "Standard attention".

Forward kernels: the rearranges of Q and K into (batch*heads, seq, head_dim) copies (the
inputs come packed as (batch, seq, 3, heads, head_dim)); ``baddbmm`` (S = scale * Q K^T,
written to HBM in the input dtype); when causal, the mask built at each call (``full``,
``triu``, the cast to the input dtype) and added to S (the ``seq_q x seq_kv`` mask is read again
for every head, from L2 while it fits); the row softmax (S read, P written);
V's rearrange copy; ``bmm`` (O = P V). Backward (autograd of the same ops, the forward
not included, as a backward benchmark times it): dO made
contiguous, dP = dO V^T and dV = P^T dO, the softmax backward as ATen runs it
(``softmax_backward_cuda_out``: an elementwise ``grad * output`` kernel, then the row kernel
reading that product and P, writing dS), dQ = dS K and dK = dS^T Q, each multiplied by the
softmax scale (``baddbmm``'s alpha: ``maybe_multiply`` in autograd's ``derivatives.yaml``, an
out-of-place elementwise kernel), and the three gradients copied into the packed layout.
Each GEMM is a cuBLAS-style tiled kernel (128x128 output tiles, 64-deep k-steps, MMAs not
chained, 8 warps, 4 stages); each elementwise or row kernel moves its bytes at 512
elements (a 128-thread block, 4 per thread: PyTorch's vectorized elementwise launch) or one
row (softmax) per program. fp8 runs as bf16 here (eager PyTorch has no fp8 bmm).
Leaves out: dropout (the benchmark's p = 0 returns its input), cuBLAS's own tile choice
(128x128 assumed), the allocator."""

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
                 elements: int, flops_per_element: float = 0.0, broadcast: tuple[str, str, int] | None = None) -> None:
    """One pass over ``elements``: each input (tensor, dtype) read and each output written once.
    ``broadcast`` (tensor, dtype, its elements): one more input, smaller, that every stretch
    of ``elements`` of its size reads again from its start (a mask added to each head's
    scores), so its blocks repeat and the L2 serves them while they fit."""
    programs = math.ceil(elements / ELEMENTS_PER_PROGRAM)
    per = ELEMENTS_PER_PROGRAM
    for tensor, dtype in inputs + outputs:
        ks.tensor(tensor, elements, dtype)
    step = {"transfers": [{"tensor": t, "block": ["item"], "bytes": per * DTYPE_BYTES[d]} for t, d in inputs]
            + [{"tensor": t, "block": ["item"], "bytes": per * DTYPE_BYTES[d], "direction": "write"} for t, d in outputs]}
    if flops_per_element:
        step["compute"] = [{"unit": "vector", "flops": float(flops_per_element * per), "dtype": "fp32"}]
    for tensor, dtype in inputs + outputs:
        ks.tensors[tensor]["shape"] = [programs, per]
    variables = {"item": np.arange(programs)}
    if broadcast is not None:
        tensor, dtype, size = broadcast
        blocks = math.ceil(size / per)
        ks.tensors[tensor] = {"shape": [blocks, per], "dtype": dtype}
        step["transfers"].append({"tensor": tensor, "block": ["again"], "bytes": per * DTYPE_BYTES[dtype]})
        variables["again"] = np.arange(programs) % blocks
    ks.add({"name": name, "steps": [step]}, programs, variables, {"warps": ROW_WARPS})


def _rows(ks: Launches, name: str, inputs: list[str], output: str, rows: int, cols: int, dtype: str,
          flops_per_element: float, exps: bool) -> None:
    """A row kernel (softmax forward or backward): one row per program, reads then writes it."""
    size = DTYPE_BYTES[dtype]
    for tensor in (*inputs, output):
        ks.tensors[tensor] = {"shape": [rows, cols], "dtype": dtype}
    work = [{"unit": "vector", "flops": float(flops_per_element * cols), "dtype": "fp32"}]
    if exps:
        work.append({"unit": "special", "flops": float(cols), "dtype": "fp32"})
    ks.add({"name": name, "steps": [
        {"transfers": [{"tensor": t, "block": ["item"], "bytes": cols * size} for t in inputs], "compute": work},
        {"transfers": [{"tensor": output, "block": ["item"], "bytes": cols * size, "direction": "write"}]},
    ]}, rows, {"item": np.arange(rows)}, {"warps": ROW_WARPS})


def _forward(ks: Launches, p: dict[str, Any], bh: int, sq: int, skv: int, d: int, qd: int, kd: int, scores: int,
             dtype: str) -> None:
    _elementwise(ks, "copy_q", [("Q_in", dtype)], [("Q", dtype)], qd)
    _elementwise(ks, "copy_k", [("K_in", dtype)], [("Kt", dtype)], kd)
    _bmm(ks, "baddbmm_qk", "Q", "Kt", "S", bh, sq, skv, d, dtype)
    if p["causal"]:
        _elementwise(ks, "mask_full", [], [("mask32", "fp32")], sq * skv)
        _elementwise(ks, "mask_triu", [("mask32", "fp32")], [("mask32u", "fp32")], sq * skv)
        _elementwise(ks, "mask_cast", [("mask32u", "fp32")], [("mask", dtype)], sq * skv)
        _elementwise(ks, "mask_add", [("S", dtype)], [("S", dtype)], scores, 1.0, broadcast=("mask", dtype, sq * skv))
    _rows(ks, "softmax", ["S"], "P", bh * sq, skv, dtype, 4.0, exps=True)
    _elementwise(ks, "copy_v", [("V_in", dtype)], [("V", dtype)], kd)
    _bmm(ks, "bmm_pv", "P", "V", "O", bh, sq, d, skv, dtype)


def _backward(ks: Launches, bh: int, sq: int, skv: int, d: int, qd: int, kd: int, dtype: str) -> None:
    """Autograd's kernels for the forward's ops (the forward itself is not part of a backward call)."""
    _elementwise(ks, "copy_do", [("dO_in", dtype)], [("dO", dtype)], qd)
    _bmm(ks, "bmm_dp", "dO", "Vt", "dP", bh, sq, skv, d, dtype)
    _bmm(ks, "bmm_dv", "Pt", "dO", "dV", bh, skv, d, sq, dtype)
    # softmax_backward_cuda_out computes grad * output first, then its row kernel
    _elementwise(ks, "softmax_grad_mul", [("dP", dtype), ("P", dtype)], [("dPP", dtype)], bh * sq * skv, 1.0)
    _rows(ks, "softmax_backward", ["dPP", "P"], "dS", bh * sq, skv, dtype, 2.0, exps=False)
    _bmm(ks, "bmm_dq", "dS", "K", "dQs", bh, sq, d, skv, dtype)
    _bmm(ks, "bmm_dk", "dSt", "Q", "dKs", bh, skv, d, sq, dtype)
    # baddbmm's alpha (the softmax scale): autograd multiplies each product by it, out of place
    _elementwise(ks, "scale_dq", [("dQs", dtype)], [("dQ", dtype)], qd, 1.0)
    _elementwise(ks, "scale_dk", [("dKs", dtype)], [("dK", dtype)], kd, 1.0)
    for grad in ("dQ", "dK", "dV"):
        _elementwise(ks, f"copy_{grad.lower()}", [(grad, dtype)], [(f"{grad}_packed", dtype)], qd if grad == "dQ" else kd)


def build(p: dict[str, Any], params: dict[str, Any], chip: Chip) -> KernelTrace:
    b, h, sq, skv, d = p["batch"], p["heads"], p["seq_q"], p["seq_kv"], p["head_dim"]
    dtype = "bf16" if p["dtype"] == "fp8" else p["dtype"]
    bh, qd, kd, scores = b * h, b * h * sq * d, b * h * skv * d, b * h * sq * skv
    ks = Launches()
    if p["backward"]:
        _backward(ks, bh, sq, skv, d, qd, kd, dtype)
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
