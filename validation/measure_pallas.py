#!/usr/bin/env python3
"""Measure our Pallas kernels (``kernels/pallas/``) through JAX on a GPU or a TPU, over a declared sweep.

    python3 validation/measure_pallas.py --out "$OUT/h200-sxm/pallas" --budget-s 150   # on a GPU
    python3 validation/measure_pallas.py --out measurements --budget-s 600           # on a TPU VM
    python3 validation/measure_pallas.py --device cpu --quick --out /tmp/pallas     # neither

``measure_gpu.py`` runs this as its ``pallas`` suite (a child process, so that JAX and
PyTorch never share a process or fight over GPU memory); it also runs on its own.

What runs: the matmul, flash-attention and row-wise (rmsnorm, layernorm, softmax)
kernels of ``kernels/pallas/`` and the GPU variants of the first two (``matmul_gpu.py``,
``attention_gpu.py``: written for the Triton lowering, so they take only that one), each
over tile configs (so ``accelsim validate`` can rank configs: Kendall tau), and JAX's own
Pallas GPU attention
(``jax.experimental.pallas.ops.gpu.attention.mha``), which is written for the Triton
lowering and shows what Pallas attention reaches on the GPU when ours cannot lower.

On a TPU (``--device tpu``, or ``auto`` where JAX has a TPU backend) our TPU kernels run
natively (Mosaic, the lowering they are written for: ``mosaic`` in the records): the matmul,
the flash attention forward and its backward (``attention_bwd``: the dkv and dq kernels)
and the row-wise kernels, each over block shapes, written under the TPU's own config
name (``tpu-v5e``, ... from JAX's ``device_kind``). Never yet run on a TPU.

GPU lowerings: our kernels are written for TPUs (``pltpu.CompilerParams``, VMEM scratch,
a sequential grid axis carrying an accumulator). On a GPU each case tries, in order,

* ``triton``: the kernel body unchanged, its TPU compiler params swapped for Triton's
  (``num_warps``, ``num_stages`` of the case's config: the Triton lowering refuses foreign
  params). Row-wise kernels lower; kernels with scratch memory do not ("scratch memory
  not implemented in the Triton backend");
* ``mosaic_gpu``: the same body with Mosaic GPU params (the TPU ``arbitrary`` axis as
  ``sequential``) and VMEM scratch as SMEM;

and uses the first that lowers, compiles and passes its check. A case that no lowering
runs is recorded in ``skipped`` with every lowering's reason. Without a JAX GPU backend
every case is skipped with that reason. On the CPU (``--device cpu``) the kernels run in
interpret mode at tiny sizes (the correctness and file path end to end) and each case's
Triton lowering for ``cuda`` is still attempted (lowering needs no GPU), so a CPU run
tells which cases will lower; the result is kept in each case's ``gpu_lowering``.

Correct first: each case's first call is checked against a float64 NumPy reference
computed from the same rounded inputs, on a few row blocks (first, middle, last; for
attention two batch-head slices), which are independent of the other rows, so the check
costs little at full size. Outputs are fresh JAX buffers (not poisoned); the checked call
is the first with fresh random inputs. Timing: ``jax_timing.py`` (batched difference
against a 256 MiB cache flush; no device events exist in JAX).

Needs jax and numpy, and the repository's ``kernels/`` (never accelsim, pydantic or simpy).
Files: ``<out>/<family>.json`` in the measurement format (``docs/measurement-format.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import statistics
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(REPO))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import measurement_format as fmt  # noqa: E402
from jax_timing import JAX_POLICIES, BelowResolution, JaxTimer  # noqa: E402
from measurement_format import FamilyFile  # noqa: E402
from provenance import (  # noqa: E402
    ClockSampler,
    clock_fields,
    clock_note,
    clock_summary,
    command_line,
    now_utc,
    nvml_sm_clock,
    read_gpu_state,
    suite_parser,
)

STARTED = time.monotonic()
JNP_DTYPES = {"bf16": jnp.bfloat16, "fp16": jnp.float16, "fp32": jnp.float32}
REL_TOLERANCE = {"bf16": 1e-2, "fp16": 5e-3, "fp32": 1e-3}
"""||out - ref|| / ||ref|| bounds; fp32 dots may run as tf32 on a GPU (~3e-4)."""
ATTENTION_REL_TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2, "fp32": 1e-3}
"""Attention rounds the probabilities to the input dtype before the second product."""
ATTENTION_BWD_REL_TOLERANCE = {"bf16": 5e-2, "fp16": 2e-2, "fp32": 1e-3}
"""The backward rounds P and dS to the input dtype before three more products (as
``measure_gpu.py`` allows SDPA's backward)."""
GPU_LOWERINGS = ("triton", "mosaic_gpu")
TPU_LOWERING = "mosaic"
"""Our kernels on a TPU: as written (Mosaic TPU), nothing swapped."""
PER_CASE_S = {"gpu": 4.0, "tpu": 4.0, "cpu": 2.0}
"""Estimated seconds per case (tracing, compiling, checking, timing) for ``--budget-s``."""


# --------------------------------------------------------------------------- lowerings


class _PallasForLowering(types.ModuleType):
    """Stands in for ``jax.experimental.pallas`` inside one kernel module while a case is
    traced: the same module, except that ``pallas_call`` gets the chosen lowering's params."""

    def __init__(self, real: types.ModuleType, lowering: str, config: dict) -> None:
        super().__init__(real.__name__)
        self._real, self._lowering, self._config = real, lowering, config

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def pallas_call(self, *args, **kwargs):
        if self._lowering == "triton":
            from jax.experimental.pallas import triton as pltriton

            kwargs["compiler_params"] = pltriton.CompilerParams(
                num_warps=self._config.get("num_warps"), num_stages=self._config.get("num_stages"))
        elif self._lowering == "mosaic_gpu":
            from jax.experimental.pallas import mosaic_gpu as plgpu

            tpu = kwargs.get("compiler_params")
            semantics = tuple("sequential" if s == "arbitrary" else s
                              for s in getattr(tpu, "dimension_semantics", None) or ())
            kwargs["compiler_params"] = plgpu.CompilerParams(dimension_semantics=semantics or None)
            if kwargs.get("scratch_shapes"):
                kwargs["scratch_shapes"] = [plgpu.SMEM(s.shape, s.dtype) for s in kwargs["scratch_shapes"]]
        return self._real.pallas_call(*args, **kwargs)


@contextlib.contextmanager
def lowered_as(module: types.ModuleType | None, lowering: str, config: dict) -> Iterator[None]:
    """Trace ``module``'s kernels for ``lowering`` (``interpret``, TPU and JAX's own kernels: unchanged)."""
    if module is None or lowering in ("interpret", TPU_LOWERING):
        yield
        return
    real = module.pl
    module.pl = _PallasForLowering(real, lowering, config)
    try:
        yield
    finally:
        module.pl = real


# --------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Prepared:
    run: Callable[[], Any]
    check: Callable[[Any], float]
    """Relative L2 error of one call's output against a float64 reference on a subset."""


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, device) -> tuple[jax.Array, np.ndarray]:
    """A random device array and its float64 copy after rounding to ``dtype`` (never zeros)."""
    x = jax.device_put(jnp.asarray(rng.standard_normal(shape, dtype=np.float32), JNP_DTYPES[dtype]), device)
    return x, np.asarray(x.astype(jnp.float32), dtype=np.float64)


def _rel(got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    if not np.isfinite(got).all():
        return math.inf
    return float(np.linalg.norm(got - ref) / (np.linalg.norm(ref) or 1.0))


def _row_blocks(rows: int, block: int) -> np.ndarray:
    return np.array(fmt.row_blocks(rows, block))


def _gemm(matmul, p: dict, c: dict, device, rng) -> Prepared:
    """``matmul(a, b)``: a kernel with its tile config bound; checked on three row blocks."""
    a, a64 = _random(rng, (p["M"], p["K"]), p["dtype"], device)
    b, b64 = _random(rng, (p["K"], p["N"]), p["dtype"], device)
    fn = jax.jit(matmul)
    rows = _row_blocks(p["M"], c["block_m"])
    return Prepared(lambda: fn(a, b), lambda out: _rel(np.asarray(out[rows].astype(jnp.float32)), a64[rows] @ b64))


def _matmul(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
    from kernels.pallas import matmul as mm

    return _gemm(functools.partial(mm.matmul.__wrapped__, block_m=c["block_m"], block_n=c["block_n"],
                                   block_k=c["block_k"], interpret=interpret), p, c, device, rng)


def _matmul_gpu(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
    from kernels.pallas import matmul_gpu as mm

    return _gemm(functools.partial(mm.matmul.__wrapped__, block_m=c["block_m"], block_n=c["block_n"],
                                   block_k=c["block_k"], num_warps=c["num_warps"], num_stages=c["num_stages"],
                                   interpret=interpret), p, c, device, rng)


def _attention_reference(q, k, v, rows: np.ndarray, causal: bool) -> np.ndarray:
    """float64 attention of the given query rows of one (batch, head) slice; causal aligned bottom-right."""
    s = q[rows] @ k.T / math.sqrt(q.shape[-1])
    if causal:
        offset = k.shape[0] - q.shape[0]
        s = np.where(np.arange(k.shape[0])[None, :] <= rows[:, None] + offset, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def _attention_check(out, q64, k64, v64, p: dict, block_m: int, heads_axis: int) -> float:
    """Two (batch, head) slices, first/middle/last query blocks; layout [b, h, s, d] or [b, s, h, d]."""
    group = p["heads"] // p["kv_heads"]
    rows = _row_blocks(p["seq_q"], block_m)
    errors = []
    for bi, hi in {(0, 0), (p["batch"] - 1, p["heads"] - 1)}:
        def take(x, h):
            return x[bi, h] if heads_axis == 1 else x[bi, :, h]
        ref = _attention_reference(take(q64, hi), take(k64, hi // group), take(v64, hi // group), rows, p["causal"])
        got = np.asarray(take(out, hi)[rows].astype(jnp.float32))
        errors.append(_rel(got, ref))
    return max(errors)


def _ours_attention(attention, p: dict, c: dict, device, rng) -> Prepared:
    """``attention(q, k, v)`` -> (out, lse): a kernel of ours with its config bound, layout [b, h, s, d]."""
    q, q64 = _random(rng, (p["batch"], p["heads"], p["seq_q"], p["head_dim"]), p["dtype"], device)
    k, k64 = _random(rng, (p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    v, v64 = _random(rng, (p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    fn = jax.jit(functools.partial(attention, causal=p["causal"], block_q=c["block_m"], block_k=c["block_n"]))
    return Prepared(lambda: fn(q, k, v)[0],
                    lambda out: _attention_check(out, q64, k64, v64, p, c["block_m"], heads_axis=1))


def _attention(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
    from kernels.pallas import attention as attn

    return _ours_attention(functools.partial(attn.attention.__wrapped__, interpret=interpret), p, c, device, rng)


@functools.partial(jax.jit, static_argnames=("group", "causal"))
def _forward_for_backward(q, k, v, group: int, causal: bool):
    """O and the log-sum-exp [b, h, s, 1] in fp32 arithmetic (plain JAX), as the forward
    kernel returns them."""
    k, v = (jnp.repeat(x.astype(jnp.float32), group, axis=1) for x in (k, v))
    s = jnp.einsum("bhqd,bhkd->bhqk", q.astype(jnp.float32), k) / math.sqrt(q.shape[-1])
    if causal:
        sq, skv = s.shape[-2:]
        s = jnp.where(jnp.arange(skv)[None, :] <= jnp.arange(sq)[:, None] + (skv - sq), s, -jnp.inf)
    lse = jax.nn.logsumexp(s, axis=-1, keepdims=True)
    return jnp.einsum("bhqk,bhkd->bhqd", jnp.exp(s - lse), v).astype(q.dtype), lse


def _attention_bwd(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
    """``attention_bwd`` (the dkv and dq kernels, and the Delta reduction before them): O and
    the log-sum-exp from plain JAX once (so that lowering the case lowers only the
    backward); checked by float64 gradients of two (batch, head) slices (dQ; dK and dV too
    without GQA, where a KV head sums several heads)."""
    from kernels.pallas import attention as attn

    shape_q = (p["batch"], p["heads"], p["seq_q"], p["head_dim"])
    shape_kv = (p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"])
    (q, q64), (k, k64), (v, v64), (do, do64) = (_random(rng, s, p["dtype"], device)
                                                for s in (shape_q, shape_kv, shape_kv, shape_q))
    group = p["heads"] // p["kv_heads"]
    o, lse = jax.block_until_ready(_forward_for_backward(q, k, v, group, p["causal"]))
    blocks = {"causal": p["causal"], "block_q": c["block_m"], "block_k": c["block_n"], "interpret": interpret}
    fn = jax.jit(functools.partial(attn.attention_bwd.__wrapped__, **blocks))

    def check(out) -> float:
        errors = []
        for bi, hi in {(0, 0), (p["batch"] - 1, p["heads"] - 1)}:
            kv = hi // group
            want = attn.reference_grads(q64[bi:bi + 1, hi:hi + 1], k64[bi:bi + 1, kv:kv + 1],
                                        v64[bi:bi + 1, kv:kv + 1], do64[bi:bi + 1, hi:hi + 1], p["causal"])
            got = [out[0][bi, hi]] + ([out[1][bi, kv], out[2][bi, kv]] if group == 1 else [])
            errors += [_rel(np.asarray(g.astype(jnp.float32)), w[0, 0]) for g, w in zip(got, want)]
        return max(errors)

    return Prepared(lambda: fn(q, k, v, o, lse, do), check)


def _attention_gpu(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
    from kernels.pallas import attention_gpu as attn

    return _ours_attention(functools.partial(attn.attention.__wrapped__, num_warps=c["num_warps"],
                                             num_stages=c["num_stages"], interpret=interpret), p, c, device, rng)


def _jax_mha(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
    from jax.experimental.pallas.ops.gpu import attention as jax_attention

    if p["kv_heads"] != p["heads"]:
        raise ValueError("jax's Pallas GPU mha takes as many K/V heads as query heads")
    shape = (p["batch"], p["seq_q"], p["heads"], p["head_dim"])
    (q, q64), (k, k64), (v, v64) = (_random(rng, shape, p["dtype"], device) for _ in range(3))
    fn = jax.jit(functools.partial(
        jax_attention.mha, segment_ids=None, sm_scale=1.0 / math.sqrt(p["head_dim"]), causal=p["causal"],
        block_sizes=jax_attention.BlockSizes(block_q=c["block_m"], block_k=c["block_n"]),
        num_warps=c["num_warps"], num_stages=c["num_stages"], interpret=interpret))
    return Prepared(lambda: fn(q, k, v),
                    lambda out: _attention_check(out, q64, k64, v64, p, c["block_m"], heads_axis=2))


def _rowwise_reference(kind: str, x: np.ndarray, weights: list[np.ndarray], eps: float) -> np.ndarray:
    if kind == "softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if kind == "rmsnorm":
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * weights[0]
    centred = x - x.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + eps) * weights[0] + weights[1]


def _rowwise(kind: str):
    def prepare(p: dict, c: dict, interpret: bool, device, rng) -> Prepared:
        from kernels.pallas import rowwise

        x, x64 = _random(rng, (p["rows"], p["cols"]), p["dtype"], device)
        weights = [_random(rng, (p["cols"],), p["dtype"], device) for _ in range({"softmax": 0, "rmsnorm": 1, "layernorm": 2}[kind])]
        fn = jax.jit(functools.partial(getattr(rowwise, kind).__wrapped__, block_rows=c["block_rows"], interpret=interpret))
        rows = _row_blocks(p["rows"], c["block_rows"])
        ref = _rowwise_reference(kind, x64[rows], [w64 for _, w64 in weights], rowwise.EPS)
        args = [x, *(w for w, _ in weights)]
        return Prepared(lambda: fn(*args), lambda out: _rel(np.asarray(out[rows].astype(jnp.float32)), ref))

    return prepare


@dataclass(frozen=True)
class Kernel:
    name: str
    family: str
    implementation: str
    module: str | None
    """The kernel module whose ``pl`` is swapped per lowering; None: a kernel written for one lowering."""
    prepare: Callable[..., Prepared]
    lowerings: tuple[str, ...]
    notes: str


KERNELS = {k.name: k for k in (
    Kernel("matmul", "gemm", "Pallas blocked matmul (kernels/pallas/matmul.py)", "kernels.pallas.matmul", _matmul,
           GPU_LOWERINGS, "A [M,K] and B [K,N] row-major; fp32 scratch accumulator over a sequential k grid axis"),
    Kernel("attention", "attention", "Pallas flash attention forward (kernels/pallas/attention.py)",
           "kernels.pallas.attention", _attention, GPU_LOWERINGS,
           "q [B,H,Sq,D], k and v [B,Hkv,Skv,D]; also writes the log-sum-exp [B,H,Sq] in fp32"),
    Kernel("attention-bwd", "attention", "Pallas flash attention backward (kernels/pallas/attention.py attention_bwd)",
           "kernels.pallas.attention", _attention_bwd, GPU_LOWERINGS,
           "dkv kernel (grid b, h, kv blocks, q blocks) then dq kernel (b, h, q blocks, kv blocks), fp32 VMEM "
           "accumulators; Delta = rowsum(dO * O) before them (XLA), GQA's dK/dV sums after"),
    Kernel("matmul-gpu", "gemm", "Pallas blocked matmul for the GPU (kernels/pallas/matmul_gpu.py)", None,
           _matmul_gpu, ("triton",), "A [M,K] and B [K,N] row-major; fp32 accumulator carried through a fori_loop over K"),
    Kernel("attention-gpu", "attention", "Pallas flash attention forward for the GPU (kernels/pallas/attention_gpu.py)",
           None, _attention_gpu, ("triton",),
           "q [B,H,Sq,D], k and v [B,Hkv,Skv,D]; state carried through a fori_loop over KV blocks; "
           "also writes the log-sum-exp [B,H,Sq] in fp32"),
    Kernel("jax-mha", "attention", "jax.experimental.pallas.ops.gpu.attention.mha (Pallas, Triton lowering)", None,
           _jax_mha, ("triton",), "q, k, v [B,S,H,D]; JAX's own Pallas GPU kernel, not one of ours"),
    *(Kernel(kind, kind, f"Pallas {kind} (kernels/pallas/rowwise.py)", "kernels.pallas.rowwise", _rowwise(kind),
             GPU_LOWERINGS, "one program per block_rows full rows, statistics in fp32")
      for kind in ("rmsnorm", "layernorm", "softmax")),
)}


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class Case:
    kernel: str
    params: dict
    config: dict

    @property
    def family(self) -> str:
        return KERNELS[self.kernel].family

    @property
    def tag(self) -> str:
        """The record id's implementation tag: kernel and config."""
        return fmt.config_tag(f"pallas-{self.kernel}", self.config)


def _gemm_cfg(bm, bn, bk, warps=4, stages=3) -> dict:
    return fmt.gemm_config(bm, bn, bk, group_m=1, num_stages=stages, num_warps=warps)  # Pallas: row-major grid


def _attn_cfg(bm, bn, warps=4, stages=2) -> dict:
    return fmt.attention_config(bm, bn, num_stages=stages, num_warps=warps)


def plan(scale: str) -> list[Case]:
    """The declared sweep. GPU: several tile configs of one shape per kernel (config rankings)
    plus a few sizes at one config; CPU: tiny shapes in interpret mode."""
    rowwise = ("rmsnorm", "layernorm", "softmax")
    if scale.startswith("tpu"):
        return tpu_plan(scale)
    if scale.startswith("cpu"):
        cases = [Case("matmul", {"M": 128, "N": 128, "K": 128, "dtype": "bf16", "batch": 1}, _gemm_cfg(64, 64, 64))]
        cases.append(Case("matmul-gpu", {"M": 128, "N": 128, "K": 128, "dtype": "bf16", "batch": 1}, _gemm_cfg(64, 64, 32)))
        cases += [Case(k, fmt.attention_params(1, 2, 2, 128, 128, 64, True), _attn_cfg(64, 64))
                  for k in ("attention", "attention-gpu", "jax-mha")]
        cases.append(Case("attention-bwd", fmt.attention_params(1, 2, 2, 128, 128, 64, True, pass_="bwd"),
                          _attn_cfg(64, 64)))
        block_rows = (8,) if scale == "cpu-quick" else (4, 8)
        cases += [Case(k, {"rows": 64, "cols": 256, "dtype": "bf16"}, {"block_rows": br, "num_warps": 4})
                  for k in rowwise for br in block_rows]
        return cases
    if scale == "gpu-quick":
        return [
            Case("matmul", {"M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "batch": 1}, _gemm_cfg(128, 128, 64)),
            Case("matmul-gpu", {"M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "batch": 1}, _gemm_cfg(128, 128, 64)),
            Case("attention", fmt.fa_setup_params(4096, 128, False), _attn_cfg(128, 128)),
            Case("attention-gpu", fmt.fa_setup_params(4096, 128, False), _attn_cfg(128, 64)),
            Case("jax-mha", fmt.fa_setup_params(4096, 128, False), _attn_cfg(128, 64)),
            Case("rmsnorm", {"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": 2, "num_warps": 4}),
        ]
    square = {"M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "batch": 1}
    cases = [Case("matmul", square, cfg) for cfg in (
        _gemm_cfg(128, 128, 64), _gemm_cfg(128, 256, 64, 8), _gemm_cfg(64, 128, 64, 4, 4), _gemm_cfg(128, 128, 32, 4, 4))]
    cases.append(Case("matmul", dict(square, M=8192, N=8192, K=8192), _gemm_cfg(128, 256, 64, 8)))
    cases += [Case("matmul-gpu", square, cfg) for cfg in (
        _gemm_cfg(128, 128, 64), _gemm_cfg(128, 256, 64, 8), _gemm_cfg(64, 128, 64, 4, 4), _gemm_cfg(128, 128, 32, 4, 4))]
    for causal in (False, True):  # the FlashAttention benchmark setup: 16k tokens, hidden 2048
        fa = fmt.fa_setup_params(4096, 128, causal)
        cases += [Case("attention", fa, cfg) for cfg in (_attn_cfg(128, 128), _attn_cfg(64, 128), _attn_cfg(128, 64))]
        cases += [Case("attention-gpu", fa, cfg) for cfg in (_attn_cfg(128, 64), _attn_cfg(64, 64), _attn_cfg(128, 64, 8))]
        cases += [Case("jax-mha", fa, cfg) for cfg in (
            _attn_cfg(128, 64), _attn_cfg(64, 64), _attn_cfg(128, 128, 8), _attn_cfg(64, 128, 4, 3))]
    cases += [Case("jax-mha", fmt.fa_setup_params(s, 128, False), _attn_cfg(128, 64)) for s in (1024, 16384)]
    for kind in rowwise:
        cases += [Case(kind, {"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": br, "num_warps": w})
                  for br in (1, 2, 4, 8) for w in (4, 8)]
        cases += [Case(kind, {"rows": 4096, "cols": cols, "dtype": "bf16"}, {"block_rows": 2, "num_warps": 4})
                  for cols in (1024, 16384)]
    return cases


def tpu_plan(scale: str) -> list[Case]:
    """On a TPU: our TPU kernels only, blocks in whole (8, 128) tiles, several block shapes
    of one problem per kernel (config rankings) and a second size at one shape. Warps and
    stages are Triton's knobs: recorded at the family's defaults, dropped from the records."""
    square = {"M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "batch": 1}
    if scale == "tpu-quick":
        return [Case("matmul", square, _gemm_cfg(512, 512, 512)),
                Case("attention", fmt.fa_setup_params(4096, 128, True), _attn_cfg(512, 512)),
                Case("attention-bwd", fmt.fa_setup_params(4096, 128, True, pass_="bwd"), _attn_cfg(512, 512)),
                Case("rmsnorm", {"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": 32, "num_warps": 4})]
    cases = [Case("matmul", square, _gemm_cfg(bm, bn, bk)) for bm, bn, bk in (
        (512, 512, 512), (1024, 1024, 512), (256, 256, 256), (512, 1024, 1024), (1024, 512, 2048))]
    cases.append(Case("matmul", dict(square, M=8192, N=8192, K=8192), _gemm_cfg(1024, 1024, 512)))
    # The JAX Pallas TPU guide's two block shapes (validation/reference/tpu-v5e: its times hold
    # ~0.1 ms of host dispatch, which the batched timing here cancels): 128^3 at 4096^3, and
    # 512x1024x1024 (bm, bn, bk) at 8192^3 as well
    cases.append(Case("matmul", square, _gemm_cfg(128, 128, 128)))
    cases.append(Case("matmul", dict(square, M=8192, N=8192, K=8192), _gemm_cfg(512, 1024, 1024)))
    for causal in (False, True):
        cases += [Case("attention", fmt.fa_setup_params(4096, 128, causal), _attn_cfg(bm, bn))
                  for bm, bn in ((512, 512), (1024, 512), (256, 256), (512, 1024))]
        cases += [Case("attention-bwd", fmt.fa_setup_params(4096, 128, causal, pass_="bwd"), _attn_cfg(bm, bn))
                  for bm, bn in ((512, 512), (1024, 1024), (256, 512))]
    for kind in ("rmsnorm", "layernorm", "softmax"):
        cases += [Case(kind, {"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": br, "num_warps": 4})
                  for br in (8, 32, 128)]
    return cases


# --------------------------------------------------------------------------- running


def tolerance(case: Case) -> float:
    table = REL_TOLERANCE
    if case.family == "attention":
        table = ATTENTION_BWD_REL_TOLERANCE if case.params["pass"] != "fwd" else ATTENTION_REL_TOLERANCE
    return table[case.params["dtype"]]


def _reason(exc: BaseException) -> str:
    return (f"{type(exc).__name__}: {exc}".splitlines() or [type(exc).__name__])[0][:300]


def probe_gpu_lowering(case: Case, device) -> dict:
    """On a machine without a GPU: does each GPU lowering of this case lower for ``cuda``?
    (Lowering runs the Pallas-to-Triton/Mosaic translation; compiling would need the GPU.)"""
    kernel = KERNELS[case.kernel]
    out = {}
    for lowering in kernel.lowerings:
        try:
            prepared_module = __import__(kernel.module, fromlist=["pl"]) if kernel.module else None
            with lowered_as(prepared_module, lowering, case.config):
                prepared = kernel.prepare(case.params, case.config, False, device, np.random.default_rng(0))
                jax.jit(prepared.run).trace().lower(lowering_platforms=("cuda",))
            out[lowering] = "ok"
        except Exception as exc:  # any failure to lower is the answer, not an error of this script
            out[lowering] = _reason(exc)
    return out


@dataclass
class Sweep:
    device: Any
    on_gpu: bool
    scale: str
    timer: JaxTimer
    deadline: float
    files: dict[str, FamilyFile]
    unsupported: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kernel, lowering) -> why the lowering cannot take that kernel at all (a
    NotImplementedError from the lowering: the same for every config), so later cases of
    the kernel skip it instead of spending their budget on it again."""
    on_tpu: bool = False
    clocks: ClockSampler = field(default_factory=lambda: ClockSampler(None))
    """Reads a GPU's SM clock during each case's timed calls."""

    @property
    def on_cpu(self) -> bool:
        return not (self.on_gpu or self.on_tpu)

    def lowerings(self, kernel: Kernel) -> tuple[str, ...]:
        if self.on_tpu:
            return (TPU_LOWERING,)
        return kernel.lowerings if self.on_gpu else ("interpret",)


def run_case(case: Case, index: int, sweep: Sweep) -> None:
    kernel = KERNELS[case.kernel]
    file = sweep.files[case.family]
    estimate = 1.5 * PER_CASE_S["gpu" if sweep.on_gpu else "tpu" if sweep.on_tpu else "cpu"]
    if time.monotonic() + estimate > sweep.deadline:
        file.skip(case.params, f"time budget: about {estimate:.0f} s needed, "
                  f"{max(0.0, sweep.deadline - time.monotonic()):.0f} s left", case.tag)
        return
    module = __import__(kernel.module, fromlist=["pl"]) if kernel.module else None
    lowerings = sweep.lowerings(kernel)
    failures = []
    for lowering in lowerings:
        if (case.kernel, lowering) in sweep.unsupported:
            failures.append(f"{lowering}: {sweep.unsupported[case.kernel, lowering]} (as for an earlier case)")
            continue
        rng = np.random.default_rng(2000 + index)
        check = {"id": fmt.record_id(case.family, case.params, case.tag), "params": case.params,
                 "config": case.config, "lowering": lowering, "tolerance": tolerance(case)}
        try:
            with lowered_as(module, lowering, case.config):
                prepared = kernel.prepare(case.params, case.config, lowering == "interpret", sweep.device, rng)
                check["rel_error"] = prepared.check(jax.block_until_ready(prepared.run()))
                check["passed"] = check["rel_error"] <= check["tolerance"]
                if not check["passed"]:
                    file.checks.append(check | {"rel_error": None if math.isinf(check["rel_error"]) else check["rel_error"]})
                    failures.append(f"{lowering}: correctness check failed (rel error {check['rel_error']:.3g})")
                    continue
                file.checks.append(check)
                call_s = sweep.timer.warm_up(prepared.run)
                with sweep.clocks.during() as readings:
                    samples, timing = sweep.timer.measure(prepared.run, call_s)
        except BelowResolution as exc:
            failures.append(f"{lowering}: {exc}")
            break
        except Exception as exc:  # lowering, compiling or running failed: the next lowering may work
            if isinstance(exc, NotImplementedError):
                sweep.unsupported[case.kernel, lowering] = _reason(exc)
            file.checks.append(check | {"passed": False, "rel_error": None, "error": _reason(exc)})
            failures.append(f"{lowering}: {_reason(exc)}")
            continue
        record = make_record(case, kernel, lowering, samples, timing, clock_summary(readings))
        if sweep.on_cpu:
            record["gpu_lowering"] = probe_gpu_lowering(case, sweep.device)
        file.records.append(record)
        print(f"  {record['id']:<64} {record['latency_s'] * 1e3:9.4f} ms  ({lowering})", flush=True)
        file.write()
        return
    file.skip(case.params, "; ".join(failures), case.tag)
    if sweep.on_cpu:
        file.skipped[-1]["gpu_lowering"] = probe_gpu_lowering(case, sweep.device)
    file.write()


def make_record(case: Case, kernel: Kernel, lowering: str, samples: list[float], timing: dict,
                clock: dict | None = None) -> dict:
    """``clock``: the SM clock during the timed calls (:func:`provenance.clock_summary`)."""
    config = dict(case.config)
    if lowering != "triton":  # warps and stages are Triton's knobs only
        config = {k: v for k, v in config.items() if k not in ("num_warps", "num_stages")}
    return {
        "id": fmt.record_id(case.family, case.params, case.tag),
        "family": case.family,
        "implementation": f"{kernel.implementation}, {lowering} lowering",
        "params": case.params,
        "config": config,
        "latency_s": statistics.median(samples),
        "samples_s": samples,
        "flops": fmt.nominal_flops(case.family, case.params),
        "bytes": fmt.min_bytes(case.family, case.params),
        "measured": True,
        "source": f"validation/measure_pallas.py, {now_utc()}",
        "notes": f"{kernel.notes}; {lowering} lowering; {len(samples)} samples ({timing['method']}, "
                 f"{timing['batch']} calls per batch, caches flushed before each call; jax_timing.py)" + clock_note(clock),
        "timing": timing,
        **clock_fields(clock),
    }


# --------------------------------------------------------------------------- command line


def describe_device(kind: str) -> tuple[Any, dict]:
    device = jax.devices(kind)[0]
    if kind == "cpu":
        return device, {"name": "cpu", "arch": None, "slug": "cpu", "kind": "cpu", "jax_platform": "cpu"}
    name = device.device_kind
    arch = fmt.arch_for_device_name(name)
    info = {"name": name, "arch": arch, "slug": fmt.device_slug(name, arch), "kind": kind, "jax_platform": device.platform}
    if kind == "gpu":
        info["compute_capability"] = getattr(device, "compute_capability", None)
    else:
        info["num_cores"] = getattr(device, "num_cores", None)
    return device, info


def jax_has_tpu() -> bool:
    try:
        return bool(jax.devices("tpu"))
    except RuntimeError:
        return False


def jax_gpu_problem() -> str | None:
    """Why JAX cannot run on a GPU here, or None when it can."""
    try:
        jax.devices("gpu")
    except RuntimeError as exc:
        return f"JAX has no GPU backend here ({_reason(exc)})"
    return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = suite_parser(__doc__.split("\n\n")[0], "output folder for <family>.json",
                          devices=("auto", "gpu", "tpu", "cpu"))
    parser.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated, from: {', '.join(KERNELS)}")
    args = parser.parse_args(argv)
    args.kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in args.kernels if k not in KERNELS]
    if unknown or not args.kernels:
        parser.error(f"--kernels: unknown {unknown or 'empty list'}; expected some of: {', '.join(KERNELS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.device == "tpu" or (args.device == "auto" and jax_has_tpu()):
        return run_on_tpu(args, argv)
    problem = jax_gpu_problem() if args.device != "cpu" else None
    if args.device == "gpu" and problem:
        print(f"measure_pallas.py: {problem}; every case is recorded as skipped", flush=True)
    kind = "cpu" if args.device == "cpu" or (args.device == "auto" and problem) else "gpu"
    scale = ("cpu" if kind == "cpu" else "gpu") + ("-quick" if args.quick else "")
    cases = [c for c in plan("gpu-quick" if args.quick else "gpu") if c.kernel in args.kernels] if problem and kind == "gpu" \
        else [c for c in plan(scale) if c.kernel in args.kernels]
    device, info = describe_device("cpu" if problem else kind)
    if problem and kind == "gpu":
        info = {"name": "no JAX GPU", "arch": None, "kind": "gpu"}
    policy = JAX_POLICIES[scale]
    provenance = {
        "date": now_utc(), "command": command_line(argv),
        "versions": __import__("provenance").module_versions("jax", "jaxlib", "numpy"),
        "clocks": {"before": read_gpu_state() if kind == "gpu" else None},
        "source": "accelsim validation/measure_pallas.py",
        "timing": {"method": "jax-batched-difference" if policy.difference else "perf_counter", "statistic": "median", "cache_flush_bytes": policy.flush_bytes,
                   "scale": scale},
    }
    families = sorted({c.family for c in cases})
    files = {f: FamilyFile(args.out / f"{f}.json", f, info, dict(provenance)) for f in families}
    print(f"pallas: {info['name']} ({scale}), {len(cases)} cases -> {args.out}", flush=True)
    if problem and kind == "gpu":
        for case in cases:
            files[case.family].skip(case.params, problem, case.tag)
    else:
        deadline = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
        sweep = Sweep(device, kind == "gpu", scale, JaxTimer(device, policy), deadline, files,
                      clocks=ClockSampler(nvml_sm_clock() if kind == "gpu" else None))
        for index, case in enumerate(cases):
            run_case(case, index, sweep)
    for file in files.values():
        file.provenance["clocks"] = file.provenance["clocks"] | {"after": read_gpu_state() if kind == "gpu" else None}
        file.write()
    print_table(files.values())
    return 0


def run_on_tpu(args: argparse.Namespace, argv: list[str] | None) -> int:
    """The TPU sweep: our kernels natively, files under the TPU's config name."""
    if not jax_has_tpu():
        print("measure_pallas.py: --device tpu, but JAX has no TPU backend here", file=sys.stderr, flush=True)
        return 2
    scale = "tpu-quick" if args.quick else "tpu"
    cases = [c for c in plan(scale) if c.kernel in args.kernels]
    device, info = describe_device("tpu")
    policy = JAX_POLICIES[scale]
    provenance = {
        "date": now_utc(), "command": command_line(argv),
        "versions": __import__("provenance").module_versions("jax", "jaxlib", "libtpu", "numpy"),
        "clocks": {}, "source": "accelsim validation/measure_pallas.py",
        "timing": {"method": "jax-batched-difference", "statistic": "median", "cache_flush_bytes": policy.flush_bytes,
                   "scale": scale},
    }
    files = {f: FamilyFile(args.out / f"{f}.json", f, info, dict(provenance)) for f in sorted({c.family for c in cases})}
    print(f"pallas: {info['name']} ({scale}), {len(cases)} cases -> {args.out}", flush=True)
    deadline = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
    sweep = Sweep(device, False, scale, JaxTimer(device, policy), deadline, files, on_tpu=True)
    for index, case in enumerate(cases):
        run_case(case, index, sweep)
    for file in files.values():
        file.write()
    print_table(files.values())
    return 0


def print_table(files) -> None:
    print()
    print(f"{'pallas family':<14} {'measured':>8} {'skipped':>8}  fastest record")
    for file in files:
        best = min(file.records, key=lambda r: r["latency_s"], default=None)
        shown = f"{best['id']}  {best['latency_s'] * 1e6:.1f} us" if best else "-"
        print(f"{file.family:<14} {len(file.records):>8} {len(file.skipped):>8}  {shown}")


if __name__ == "__main__":
    sys.exit(main())
