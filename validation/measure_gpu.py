#!/usr/bin/env python3
"""Measure, on one GPU (or the CPU), what accelsim is compared with: library kernels, our
Pallas kernels through JAX, and collectives over the visible GPUs.

One command runs its suites in turn and writes the measurement format
(``docs/measurement-format.md``), one JSON file per kernel family:

* ``library``: cuBLAS GEMMs (``torch.matmul``, fp8 through ``torch._scaled_mm``, int8
  through ``torch._int_mm``), ``scaled_dot_product_attention`` forward and backward,
  ``softmax``, ``layer_norm``, ``rms_norm`` and device-to-device copies -> ``<out>/<family>.json``;
* ``triton``: ``kernels/triton/`` matmul, attention, softmax, layernorm over tile configs
  (``measure_triton.py``, a child process) -> ``<out>/triton/<family>.json``;
* ``pallas``: ``kernels/pallas/`` (and JAX's own Pallas GPU attention) over tile configs,
  through JAX's GPU lowerings (``measure_pallas.py``, a child process) -> ``<out>/pallas/<family>.json``;
* ``collectives``: an nccl-tests-like all-reduce / all-gather / reduce-scatter size sweep
  through torch.distributed (NCCL) and JAX (``measure_collectives.py``, child processes;
  "1 device" is recorded as skipped) -> ``<out>/collectives/{nccl,jax}.json``;
* ``micro``: load latency by pointer chasing (64 KiB .. 1 GiB working sets) and read
  bandwidth against bytes in flight per SM, for chip configs to cite (``measure_micro.py``,
  a child process) -> ``<out>/micro/microbenchmarks.json`` (not kernel records).

The command for a lease of the GPU machine (one H200; ~6 minutes; a lease returns at most
8 files, hence the bundle; ``timeout_s`` 480 leaves ~5 of the 15 minutes for a shorter second call)::

    set -o pipefail; PYTHONUNBUFFERED=1 python3 validation/measure_gpu.py --budget-s 420 \
        --out /tmp/m/h200-sxm --bundle "$OUT/h200-sxm.tar.gz" 2>&1 | tee "$OUT/log.txt"

then, here: ``tar -xzf <files_at>/h200-sxm.tar.gz -C validation/measurements/``. Other uses::

    python3 validation/measure_gpu.py                       # everything, no time limit
    python3 validation/measure_gpu.py --quick               # a few points per suite: smoke run
    python3 validation/measure_gpu.py --device cpu --quick  # no GPU: tiny sizes, same files
    python3 validation/measure_gpu.py --suites library --families gemm,copy
    python3 validation/measure_gpu.py --estimate --device cuda   # print the plan and its time

How it times (METHOD.md of the device machines): every kernel family is first checked
on a small case against a float64 CPU reference computed from the same (already rounded)
inputs, with outputs poisoned first where the library takes an ``out=`` tensor; cases
whose code path failed its check are not timed. Inputs are random, never zeros. Each case is warmed up
(at least 3 calls and 25 ms), then timed rep by rep: a 256 MiB buffer is written before
every rep so that L2 holds none of the inputs (cold-cache timings, as the simulator models
a kernel that starts from HBM), CUDA events bracket the call, the median of all reps is
``latency_s`` and every rep is kept in ``samples_s``. When the host takes longer to issue
a call than the flush takes to run, ``torch.cuda._sleep`` keeps the GPU busy meanwhile so
that no launch gap lands inside the events. Clocks are read with ``nvidia-smi`` before and
after each family and never changed. On the CPU, ``time.perf_counter`` brackets each
call (one thread) and a 32 MiB buffer is written between reps.

Run time: ``estimate_case_s`` predicts each case from its flops and bytes over rates a
little under those measured on this workplace's H200s (bf16 GEMM ~790 TFLOP/s, copies
~4.3 TB/s read+write; KINDS.md), plus a fixed cost per case (set-up, warm-up, one
profiled call for kernel names: 0.6 s assumed) and 20 s of start-up; ``--estimate``
prints it per family. The full GPU plan (162 cases) comes to about 140 s, mostly fixed
costs: the timed reps add up to ~0.3 s per case by design (``Policy.target_s``), and one
call of every case together is only ~0.23 s of GPU time. Were the fixed cost 2 s a
case, the sweep would still end in about 6 minutes. ``--budget-s`` uses the same
estimate, times 1.5, to decide whether to start each next case; the library sweep stops
early enough to leave ``SUITE_RESERVE_S`` to each later suite (140 s for Triton, 140 s for
Pallas, 40 s for collectives, 5 s for the microbenchmarks), and each child gets what is
left of the budget.

Files are written atomically after every case, so a run killed by a time limit keeps all
it had measured; ``--bundle`` rewrites the archive after each suite. A short table of
every file written (measured, skipped, first skip reason) is printed last. Standalone:
standard library, torch, optionally triton (only for its version), its sibling
``measurement_format.py`` and ``provenance.py`` (standard library only); the Triton suite
needs triton and ``kernels/``, the Pallas and JAX suites jax and numpy. It never imports accelsim (nor pydantic or simpy).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measurement_format as fmt  # noqa: E402  (sibling files, standard library only)
from measurement_format import FamilyFile  # noqa: E402
from provenance import (  # noqa: E402
    ClockSampler,
    budget_seconds,
    clock_fields,
    clock_note,
    clock_summary,
    command_line,
    cpu_model,
    module_versions,
    now_utc,
    nvml_sm_clock,
    out_folder,
    read_gpu_state,
)

STARTED = time.monotonic()
HERE = Path(__file__).resolve().parent

TORCH_DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp8": getattr(torch, "float8_e4m3fn", None),
    "int8": torch.int8,
}

REL_TOLERANCE = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 1e-2, "fp16": 5e-3, "fp8": 1e-2, "int8": 0.0}
"""Largest accepted ||out - ref|| / ||ref|| against a float64 reference computed from the same
rounded inputs: only accumulation and output rounding differ."""
ATTENTION_REL_TOLERANCE = {
    "fwd": {"bf16": 2e-2, "fp16": 1e-2},
    "bwd": {"bf16": 5e-2, "fp16": 2e-2},
}
"""Attention rounds the probabilities to the input dtype before the second product, and the
backward pass compounds that, hence looser bounds than a single GEMM."""


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class Policy:
    """How long to warm up and how many reps to time, per case."""

    flush_bytes: int
    warmup_s: float
    min_warmup_calls: int
    max_warmup_calls: int
    target_s: float
    """Timed reps stop near this much GPU time (flushes included), within the rep bounds."""
    min_reps: int
    max_reps: int


POLICIES = {
    "gpu": Policy(256 * 2**20, 0.025, 3, 100, 0.3, 20, 200),
    "gpu-quick": Policy(256 * 2**20, 0.025, 3, 50, 0.05, 10, 50),
    "cpu": Policy(32 * 2**20, 0.0, 2, 2, 0.02, 3, 10),
    "cpu-quick": Policy(32 * 2**20, 0.0, 1, 1, 0.01, 3, 5),
}

LLAMA_LINEAR_SHAPES = {
    # (N, K) of each projection, as nn.Linear(K, N); QKV and gate/up fused as serving engines do.
    "llama3-8b": {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)},
    "llama3-70b": {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)},
}


_gemm, _attn, _fa_setup, _rows = fmt.gemm_params, fmt.attention_params, fmt.fa_setup_params, fmt.rows_params


def gemm_plan(scale: str) -> list[dict]:
    if scale == "cpu-quick":
        return [_gemm(64, 64, 64, "fp32"), _gemm(64, 64, 64, "bf16"), _gemm(64, 64, 64, "fp8")]
    if scale == "cpu":
        return [_gemm(s, s, s, d) for s in (64, 128) for d in ("fp32", "bf16", "fp16", "fp8")] + [
            _gemm(32, 64, 128, "int8"), _gemm(64, 64, 32, "bf16", batch=4)]
    if scale == "gpu-quick":
        return [_gemm(4096, 4096, 4096, "bf16"), _gemm(8192, 8192, 8192, "bf16"), _gemm(8192, 8192, 8192, "fp8"),
                _gemm(2048, 10240, 8192, "bf16")]
    square = [_gemm(s, s, s, d) for d in ("bf16", "fp16", "fp8") for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    fp32 = [_gemm(s, s, s, d) for d in ("fp32", "tf32") for s in (1024, 4096, 8192)]
    int8 = [_gemm(s, s, s, "int8") for s in (4096, 8192, 16384)]
    llm = [
        _gemm(tokens, n, k, "bf16")
        for shapes in LLAMA_LINEAR_SHAPES.values()
        for n, k in shapes.values()
        for tokens in (1, 16, 128, 1024, 4096, 16384)
    ]
    # Attention-shaped batched products: Q K^T and P V for 128 (batch x head) slices of 2048 tokens.
    batched = [_gemm(2048, 2048, 128, "bf16", batch=128), _gemm(2048, 128, 2048, "bf16", batch=128)]
    return square + fp32 + int8 + llm + batched


def attention_plan(scale: str) -> list[dict]:
    if scale == "cpu-quick":
        return [_attn(1, 2, 2, 64, 64, 32, True), _attn(1, 2, 2, 64, 64, 32, True, pass_="bwd")]
    if scale == "cpu":
        return [
            _attn(1, 4, 4, 128, 128, 64, False), _attn(1, 4, 4, 128, 128, 64, True),
            _attn(1, 4, 2, 128, 128, 64, True), _attn(2, 4, 4, 1, 256, 64, False, "fp16"),
            _attn(1, 4, 4, 128, 128, 64, True, pass_="bwd"),
        ]
    if scale == "gpu-quick":
        return [_fa_setup(4096, 128, False), _fa_setup(4096, 128, True), _fa_setup(4096, 128, True, pass_="bwd")]
    seqs = (512, 1024, 2048, 4096, 8192, 16384)
    fa = [_fa_setup(s, d, c) for d in (64, 128) for c in (False, True) for s in seqs]
    fp16 = [_fa_setup(4096, 128, c, "fp16") for c in (False, True)]
    gqa = [_attn(1, 64, 8, 4096, 4096, 128, True), _attn(2, 32, 8, 8192, 8192, 128, True),
           _attn(1, 64, 8, 8192, 8192, 128, True)]
    decode = [_attn(16, 32, 32, 1, 8192, 128, False), _attn(16, 32, 8, 1, 8192, 128, False),
              _attn(64, 64, 8, 1, 4096, 128, False)]
    # batch one with few KV heads: split-KV decode and its combine, each kernel's device time
    # recorded (kernel_device_s); the model misses TileOPs' H200 calls there by 3-7 us
    decode += [_attn(1, 32, 4, 1, s, 128, False, "fp16") for s in (1024, 4096, 16384, 65536)]
    bwd = [_fa_setup(s, 128, c, pass_="bwd") for c in (False, True) for s in (2048, 8192)]
    bwd += [_fa_setup(4096, 64, c, pass_="bwd") for c in (False, True)]
    bwd += [_attn(1, 64, 8, 4096, 4096, 128, True, pass_="bwd")]
    return fa + fp16 + gqa + decode + bwd


def softmax_plan(scale: str) -> list[dict]:
    if scale.startswith("cpu"):
        return [_rows(64, 256, "fp32")] + ([] if scale == "cpu-quick" else [_rows(128, 1024, "bf16")])
    if scale == "gpu-quick":
        return [_rows(4096, 16384, "bf16")]
    bf16 = [_rows(4096, c, "bf16") for c in (1024, 4096, 16384, 65536)]
    bf16 += [_rows(16384, c, "bf16") for c in (1024, 4096, 16384)] + [_rows(1024, 131072, "bf16")]
    return bf16 + [_rows(4096, c, "fp32") for c in (4096, 16384)]


def layernorm_plan(scale: str) -> list[dict]:
    if scale.startswith("cpu"):
        return [_rows(64, 256, "fp32")] + ([] if scale == "cpu-quick" else [_rows(128, 1024, "bf16")])
    if scale == "gpu-quick":
        return [_rows(4096, 8192, "bf16")]
    # rows 4096 x cols 1k..16k in fp32 is the Liger-Kernel benchmark set (validation/reference).
    cases = [_rows(4096, c, d) for d in ("fp32", "bf16") for c in (1024, 2048, 4096, 8192, 16384)]
    return cases + [_rows(16384, 8192, "bf16")]


def rmsnorm_plan(scale: str) -> list[dict]:
    if scale.startswith("cpu"):
        return [_rows(64, 256, "fp32")] + ([] if scale == "cpu-quick" else [_rows(128, 1024, "bf16")])
    if scale == "gpu-quick":
        return [_rows(4096, 8192, "bf16")]
    # rows 2048 x cols 1k..32k in bf16 is the Liger-Kernel benchmark set (validation/reference).
    cases = [_rows(2048, c, "bf16") for c in (1024, 2048, 4096, 8192, 16384, 32768)]
    return cases + [_rows(16384, c, "bf16") for c in (4096, 8192)] + [_rows(4096, 4096, "fp32")]


def copy_plan(scale: str) -> list[dict]:
    if scale == "cpu-quick":
        return [{"bytes": 2**20}]
    if scale == "cpu":
        return [{"bytes": 2**20}, {"bytes": 16 * 2**20}]
    if scale == "gpu-quick":
        return [{"bytes": 16 * 2**20}, {"bytes": 2**30}]
    return [{"bytes": 2**p} for p in range(20, 33)]  # 1 MiB .. 4 GiB


def _elementwise(elements: int, dtype: str, inputs: int, outputs: int = 1) -> dict:
    return {"elements": elements, "dtype": dtype, "inputs": inputs, "outputs": outputs}


def elementwise_plan(scale: str) -> list[dict]:
    """``torch.add`` (2 in, 1 out), ``torch.mul`` by a scalar (1 in, 1 out) and ``fill_`` (0 in,
    1 out): the memory-bound kernels between the GEMMs of every model (residual adds, scales)."""
    if scale.startswith("cpu"):
        return [_elementwise(2**16, "fp32", 2)] + ([] if scale == "cpu-quick" else [_elementwise(2**16, "bf16", 0)])
    if scale == "gpu-quick":
        return [_elementwise(2**26, "bf16", 2)]
    adds = [_elementwise(2**p, "bf16", 2) for p in (20, 22, 24, 26, 28)] + [_elementwise(2**28, "fp32", 2)]
    scales = [_elementwise(2**p, "bf16", 1) for p in (24, 28)]
    fills = [_elementwise(2**p, d, 0) for p, d in ((24, "bf16"), (28, "bf16"), (28, "fp32"))]
    return adds + scales + fills


PLANS: dict[str, Callable[[str], list[dict]]] = {
    "copy": copy_plan,
    "elementwise": elementwise_plan,
    "gemm": gemm_plan,
    "attention": attention_plan,
    "softmax": softmax_plan,
    "layernorm": layernorm_plan,
    "rmsnorm": rmsnorm_plan,
}
"""Run order: the copy sweep first, since it gives the bandwidth ceiling the others are read against."""


# --------------------------------------------------------------------------- run-time estimate

GPU_RATES_FLOPS_PER_S = {"bf16": 700e12, "fp16": 700e12, "fp8": 1200e12, "int8": 1200e12, "tf32": 350e12, "fp32": 45e12}
GPU_ATTENTION_FLOPS_PER_S = {"fwd": 350e12, "bwd": 250e12}
GPU_COPY_BYTES_PER_S = 3.5e12
CPU_FLOPS_PER_S = 20e9
CPU_BYTES_PER_S = 5e9
PER_CASE_FIXED_S = {"gpu": 0.6, "cpu": 0.05}
"""Set-up, random inputs, warm-up calls, one profiled call, writing the file."""
STARTUP_S = {"gpu": 20.0, "cpu": 3.0}
"""Importing torch, starting CUDA, the clock ramp, the correctness checks."""


def estimate_kernel_s(family: str, params: dict, on_gpu: bool) -> float:
    flops = fmt.nominal_flops(family, params)
    nbytes = fmt.min_bytes(family, params)
    if not on_gpu:
        return max(flops / CPU_FLOPS_PER_S, nbytes / CPU_BYTES_PER_S, 20e-6)
    if family == "gemm":
        rate = GPU_RATES_FLOPS_PER_S[params["dtype"]]
    elif family == "attention":
        rate = GPU_ATTENTION_FLOPS_PER_S[params["pass"]]
    else:
        rate = math.inf
    return max(flops / rate, nbytes / GPU_COPY_BYTES_PER_S, 5e-6)


def estimate_case_s(family: str, params: dict, policy: Policy, on_gpu: bool) -> float:
    kernel = estimate_kernel_s(family, params, on_gpu)
    flush = policy.flush_bytes / (GPU_COPY_BYTES_PER_S if on_gpu else CPU_BYTES_PER_S)
    reps = min(policy.max_reps, max(policy.min_reps, math.ceil(policy.target_s / (kernel + flush))))
    warmup = max(policy.min_warmup_calls * kernel, min(policy.warmup_s, policy.max_warmup_calls * kernel))
    return PER_CASE_FIXED_S["gpu" if on_gpu else "cpu"] + warmup + reps * (kernel + flush)


# --------------------------------------------------------------------------- device facts


@dataclass
class Device:
    torch_device: torch.device
    info: dict

    @property
    def on_gpu(self) -> bool:
        return self.torch_device.type == "cuda"

    def sync(self) -> None:
        if self.on_gpu:
            torch.cuda.synchronize(self.torch_device)


def describe_device(kind: str) -> Device:
    if kind == "cpu":
        # One thread: the CPU run is a schema and smoke test, and thread wake-ups on a shared
        # two-core machine cost milliseconds per call, far more than these tiny kernels.
        torch.set_num_threads(1)
        info = {"name": "cpu", "arch": None, "slug": "cpu", "kind": "cpu", "cpu_model": cpu_model(),
                "torch_threads": torch.get_num_threads()}
        return Device(torch.device("cpu"), info)
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    name = torch.cuda.get_device_name(index)
    arch = fmt.arch_for_device_name(name)
    info = {
        "name": name,
        "arch": arch,
        "slug": fmt.device_slug(name, arch),
        "kind": "gpu",
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "l2_bytes": getattr(props, "L2_cache_size", None),
    }
    return Device(torch.device("cuda", index), info)


def pci_bus_id(device: Device) -> str | None:
    """The GPU's PCI address as NVML takes it (``0000:3B:00.0``), from PyTorch's device
    properties; None on the CPU or where PyTorch does not give it."""
    if not device.on_gpu:
        return None
    props = torch.cuda.get_device_properties(device.torch_device)
    parts = [getattr(props, f"pci_{name}_id", None) for name in ("domain", "bus", "device")]
    if any(not isinstance(part, int) for part in parts):
        return None
    return f"{parts[0]:04X}:{parts[1]:02X}:{parts[2]:02X}.0"


def clock_sampler(device: Device) -> ClockSampler:
    """What reads the timed GPU's SM clock during each case (nothing on the CPU)."""
    return ClockSampler(nvml_sm_clock(pci_bus_id(device)) if device.on_gpu else None)


def library_versions(device: Device) -> dict:
    versions = module_versions("torch", "triton", "numpy") | {
        "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None)}
    if torch.backends.cudnn.is_available():
        versions["cudnn"] = torch.backends.cudnn.version()
    return versions


def torch_settings() -> dict:
    """Library switches that change which kernel runs; recorded, never changed (except fp32 matmul mode per case)."""
    matmul = torch.backends.cuda.matmul
    settings = {
        "allow_bf16_reduced_precision_reduction": getattr(matmul, "allow_bf16_reduced_precision_reduction", None),
        "allow_fp16_reduced_precision_reduction": getattr(matmul, "allow_fp16_reduced_precision_reduction", None),
    }
    for backend in ("flash", "mem_efficient", "math", "cudnn"):
        probe = getattr(torch.backends.cuda, f"{backend}_sdp_enabled", None)
        settings[f"sdp_{backend}_enabled"] = probe() if probe else None
    return settings


# --------------------------------------------------------------------------- kernels under test


@dataclass
class Prepared:
    """One case, ready to run: inputs allocated on the device."""

    run: Callable[[], Any]
    """Launches the kernel(s) once and returns the output(s)."""
    reference: Callable[[], Any]
    """The same function in float64 on the CPU, from the same inputs (for the small check only)."""
    implementation: str
    notes: str
    poison: Callable[[], None] = lambda: None
    """Overwrites preallocated outputs, so that the check sees any element the kernel missed."""


def _randn(shape, dtype: str, device: Device) -> torch.Tensor:
    if dtype == "int8":
        return torch.randint(-8, 8, shape, dtype=torch.int8, device=device.torch_device)
    if dtype == "fp8":
        return torch.randn(shape, dtype=torch.bfloat16, device=device.torch_device).to(TORCH_DTYPES["fp8"])
    return torch.randn(shape, dtype=TORCH_DTYPES[dtype], device=device.torch_device)


def _as_double(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu").double()


def _set_fp32_matmul(dtype: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")


def prepare_gemm(p: dict, device: Device) -> Prepared:
    M, N, K, dtype, batch = p["M"], p["N"], p["K"], p["dtype"], p["batch"]
    lead = (batch,) if batch > 1 else ()
    if dtype in ("fp8", "int8"):
        if batch > 1:
            raise ValueError(f"batched {dtype} GEMMs are not measured")
        a = _randn((M, K), dtype, device)
        b = _randn((N, K), dtype, device).t()  # column-major [K, N]: what cuBLASLt's fp8/int8 paths take
        if dtype == "fp8":
            scale = torch.ones((), dtype=torch.float32, device=device.torch_device)

            def run():
                return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)

            implementation = "torch._scaled_mm (cuBLASLt fp8 e4m3)" if device.on_gpu else "torch._scaled_mm (CPU)"
            notes = "A [M,K] row-major, B [K,N] column-major, e4m3 inputs, per-tensor scales 1.0, bf16 output"
        else:

            def run():
                return torch._int_mm(a, b)

            implementation = "torch._int_mm (cuBLASLt int8)" if device.on_gpu else "torch._int_mm (CPU)"
            notes = "A [M,K] row-major, B [K,N] column-major, int32 output"
        return Prepared(run, lambda: _as_double(a) @ _as_double(b), implementation, notes)

    _set_fp32_matmul(dtype)
    a = _randn(lead + (M, K), dtype, device)
    b = _randn(lead + (K, N), dtype, device)
    out = torch.empty(lead + (M, N), dtype=TORCH_DTYPES[dtype], device=device.torch_device)
    library = "cuBLAS" if device.on_gpu else "CPU"
    notes = "A [M,K] and B [K,N] row-major, output preallocated (out=)"
    if dtype == "tf32":
        notes += "; torch.set_float32_matmul_precision('high')"
    elif dtype == "fp32":
        notes += "; torch.set_float32_matmul_precision('highest')"
    return Prepared(
        run=lambda: torch.matmul(a, b, out=out),
        reference=lambda: _as_double(a) @ _as_double(b),
        implementation=f"torch.matmul ({library})",
        notes=notes,
        poison=lambda: out.fill_(float("nan")),
    )


def _attention_reference(q, k, v, causal: bool, grad_out=None):
    q, k, v = (_as_double(t) for t in (q, k, v))
    if grad_out is not None:
        for t in (q, k, v):
            t.requires_grad_(True)
    group = q.shape[1] // k.shape[1]
    keys, values = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:  # torch's is_causal: top-left aligned lower triangle
        visible = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~visible, float("-inf"))
    out = scores.softmax(dim=-1) @ values
    if grad_out is None:
        return out
    return torch.autograd.grad(out, (q, k, v), _as_double(grad_out))


def prepare_attention(p: dict, device: Device) -> Prepared:
    if p["causal"] and p["seq_q"] != p["seq_kv"]:
        raise ValueError("causal attention is measured with seq_q == seq_kv only (torch aligns the mask top-left)")
    q = _randn((p["batch"], p["heads"], p["seq_q"], p["head_dim"]), p["dtype"], device)
    k = _randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    v = _randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    kwargs: dict[str, Any] = {"is_causal": p["causal"]}
    if p["kv_heads"] != p["heads"]:
        kwargs["enable_gqa"] = True
    implementation = "torch.nn.functional.scaled_dot_product_attention (default backend choice)"
    notes = "q [B,H,Sq,D], k and v [B,Hkv,Skv,D] contiguous; default scale 1/sqrt(D)"
    if p["pass"] == "fwd":
        return Prepared(
            run=lambda: F.scaled_dot_product_attention(q, k, v, **kwargs),
            reference=lambda: _attention_reference(q, k, v, p["causal"]),
            implementation=implementation,
            notes=notes,
        )
    for t in (q, k, v):
        t.requires_grad_(True)
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    grad_out = torch.randn_like(out)
    return Prepared(
        run=lambda: torch.autograd.grad(out, (q, k, v), grad_out, retain_graph=True),
        reference=lambda: _attention_reference(q, k, v, p["causal"], grad_out),
        implementation=implementation + ", backward",
        notes=notes + "; times torch.autograd.grad(out, (q, k, v)) with the graph retained: every backward kernel, "
        "preprocessing included",
    )


def prepare_softmax(p: dict, device: Device) -> Prepared:
    x = _randn((p["rows"], p["cols"]), p["dtype"], device)
    return Prepared(
        run=lambda: torch.softmax(x, dim=-1),
        reference=lambda: torch.softmax(_as_double(x), dim=-1),
        implementation="torch.softmax(dim=-1)",
        notes="rows x cols contiguous, softmax over each row",
    )


def prepare_layernorm(p: dict, device: Device) -> Prepared:
    cols = p["cols"]
    x = _randn((p["rows"], cols), p["dtype"], device)
    weight, bias = _randn((cols,), p["dtype"], device), _randn((cols,), p["dtype"], device)
    return Prepared(
        run=lambda: F.layer_norm(x, (cols,), weight, bias, eps=1e-5),
        reference=lambda: F.layer_norm(_as_double(x), (cols,), _as_double(weight), _as_double(bias), eps=1e-5),
        implementation="torch.nn.functional.layer_norm",
        notes="forward only; normalised over cols, with weight and bias",
    )


def prepare_rmsnorm(p: dict, device: Device) -> Prepared:
    if not hasattr(F, "rms_norm"):
        raise RuntimeError(f"torch {torch.__version__} has no torch.nn.functional.rms_norm")
    cols = p["cols"]
    x = _randn((p["rows"], cols), p["dtype"], device)
    weight = _randn((cols,), p["dtype"], device)

    def reference():
        xd = _as_double(x)
        return xd * torch.rsqrt(xd.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * _as_double(weight)

    return Prepared(
        run=lambda: F.rms_norm(x, (cols,), weight, eps=1e-6),
        reference=reference,
        implementation="torch.nn.functional.rms_norm",
        notes="forward only; normalised over cols, with weight",
    )


def prepare_copy(p: dict, device: Device) -> Prepared:
    src = torch.randint(0, 256, (p["bytes"],), dtype=torch.uint8, device=device.torch_device)
    dst = torch.empty_like(src)
    return Prepared(
        run=lambda: dst.copy_(src),
        reference=lambda: _as_double(src),
        implementation="torch.Tensor.copy_ (device to device)",
        notes="uint8 tensors; params.bytes is the size copied, bytes counts it read and written",
        poison=lambda: torch.bitwise_not(src, out=dst),  # every byte differs from its source
    )


ELEMENTWISE_SCALE = 1.5
"""The scalar of the 1-in kernel (``torch.mul``) and the value of the 0-in one (``fill_``)."""


def prepare_elementwise(p: dict, device: Device) -> Prepared:
    if p["outputs"] != 1 or p["inputs"] > 2:
        raise ValueError("measured elementwise kernels write one array and read at most two")
    shape = (p["elements"],)
    inputs = [_randn(shape, p["dtype"], device) for _ in range(p["inputs"])]
    out = torch.empty(shape, dtype=TORCH_DTYPES[p["dtype"]], device=device.torch_device)
    if p["inputs"] == 2:
        run, ref, name = (lambda: torch.add(inputs[0], inputs[1], out=out),
                          lambda: _as_double(inputs[0]) + _as_double(inputs[1]), "torch.add(a, b, out=c)")
    elif p["inputs"] == 1:
        run, ref, name = (lambda: torch.mul(inputs[0], ELEMENTWISE_SCALE, out=out),
                          lambda: _as_double(inputs[0]) * ELEMENTWISE_SCALE, f"torch.mul(a, {ELEMENTWISE_SCALE}, out=c)")
    else:
        run, ref, name = (lambda: out.fill_(ELEMENTWISE_SCALE),
                          lambda: torch.full(shape, ELEMENTWISE_SCALE, dtype=torch.float64), f"c.fill_({ELEMENTWISE_SCALE})")
    return Prepared(run=run, reference=ref, implementation=name,
                    notes="contiguous 1-D tensors; PyTorch's vectorised elementwise kernel",
                    poison=lambda: out.fill_(float("nan")))


PREPARE: dict[str, Callable[[dict, Device], Prepared]] = {
    "gemm": prepare_gemm,
    "attention": prepare_attention,
    "softmax": prepare_softmax,
    "layernorm": prepare_layernorm,
    "rmsnorm": prepare_rmsnorm,
    "copy": prepare_copy,
    "elementwise": prepare_elementwise,
}


# --------------------------------------------------------------------------- correctness


def check_params(family: str, p: dict) -> dict:
    """A small case that exercises the same code path (dtype, layout, masking, GQA) as ``p``."""
    if family == "gemm":
        return _gemm(256, 256, 256, p["dtype"], min(p["batch"], 2))
    if family == "attention":
        group = min(p["heads"] // p["kv_heads"], 4)
        kv_heads = 1 if group > 1 else 2
        seq_q = 1 if p["seq_q"] == 1 else min(p["seq_q"], 128)
        seq_kv = seq_q if p["seq_q"] == p["seq_kv"] else min(p["seq_kv"], 256)
        return _attn(1, kv_heads * group, kv_heads, seq_q, seq_kv, p["head_dim"], p["causal"], p["dtype"], p["pass"])
    if family == "copy":
        return {"bytes": 2**20}
    if family == "elementwise":
        return {**p, "elements": min(p["elements"], 2**16)}
    return _rows(64, min(p["cols"], 1024), p["dtype"])


def rel_error(out: Any, ref: Any) -> float:
    """||out - ref|| / ||ref|| in float64 (the largest over tuple members); inf for NaN or infinity."""
    if isinstance(ref, (tuple, list)):
        return max(rel_error(o, r) for o, r in zip(out, ref))
    got = _as_double(out)
    if not torch.isfinite(got).all():
        return math.inf
    norm = torch.linalg.vector_norm(ref).item()
    return torch.linalg.vector_norm(got - ref).item() / (norm or 1.0)


def tolerance(family: str, p: dict) -> float:
    if family == "copy":
        return 0.0
    if family == "attention":
        return ATTENTION_REL_TOLERANCE[p["pass"]][p["dtype"]]
    return REL_TOLERANCE[p["dtype"]]


def run_check(family: str, p: dict, device: Device) -> dict:
    """Run the small case once against its float64 reference; the result goes in the file's ``checks``."""
    small = check_params(family, p)
    entry = {"id": fmt.record_id(family, small), "params": small, "tolerance": tolerance(family, small)}
    try:
        prepared = PREPARE[family](small, device)
        prepared.poison()
        out = prepared.run()
        device.sync()
        entry["rel_error"] = rel_error(out, prepared.reference())
    except Exception as exc:  # an unsupported dtype or shape on this device: reported, not fatal
        return entry | {"passed": False, "rel_error": None, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    entry["passed"] = entry["rel_error"] <= entry["tolerance"]
    if math.isinf(entry["rel_error"]):
        entry["rel_error"] = None
        entry["error"] = "output holds NaN or infinity"
    return entry


# --------------------------------------------------------------------------- timing


class Timer:
    """Times one call per rep with the L2 (or the CPU's caches) flushed before each rep."""

    def __init__(self, device: Device, policy: Policy) -> None:
        self.device = device
        self.policy = policy
        self._flush_buffer = torch.empty(policy.flush_bytes, dtype=torch.uint8, device=device.torch_device)
        self.flush_s = self._time_flush()

    def _flush(self) -> None:
        self._flush_buffer.fill_(1)

    def flush(self) -> None:
        """Flush the caches and wait for it (before a profiled call)."""
        self._flush()
        self.device.sync()

    def _time_flush(self) -> float:
        if not self.device.on_gpu:
            start = time.perf_counter()
            self._flush()
            return time.perf_counter() - start
        return statistics.median(self.samples(self._flush, reps=10, flush=False))

    def samples(self, run: Callable[[], Any], reps: int, cushion_s: float = 0.0, flush: bool = True) -> list[float]:
        if not self.device.on_gpu:
            out = []
            for _ in range(reps):
                if flush:
                    self._flush()
                start = time.perf_counter()
                run()
                out.append(time.perf_counter() - start)
            return out
        cycles = int(cushion_s * ASSUMED_SM_CLOCK_HZ)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for start, end in zip(starts, ends):
            if flush:
                self._flush()
            if cycles:
                torch.cuda._sleep(cycles)
            start.record()
            run()
            end.record()
        torch.cuda.synchronize(self.device.torch_device)
        return [start.elapsed_time(end) / 1e3 for start, end in zip(starts, ends)]


ASSUMED_SM_CLOCK_HZ = 1.98e9
"""Only sizes the launch cushion (``torch.cuda._sleep`` counts cycles); need not be exact."""
MAX_CUSHION_S = 1e-3


@dataclass
class WarmUp:
    calls: int
    call_s: float
    """Median wall time of one synchronised call after the first (an upper bound on the kernel time)."""
    issue_s: float
    """Median host time to issue one call (before synchronising)."""


def warm_up(run: Callable[[], Any], device: Device, policy: Policy) -> WarmUp:
    calls, call_times, issue_times = 0, [], []
    start = time.perf_counter()
    while calls < policy.min_warmup_calls or (
        time.perf_counter() - start < policy.warmup_s and calls < policy.max_warmup_calls
    ):
        t0 = time.perf_counter()
        run()
        t1 = time.perf_counter()
        device.sync()
        t2 = time.perf_counter()
        if calls:  # the first call may compile, autotune or create handles
            issue_times.append(t1 - t0)
            call_times.append(t2 - t0)
        calls += 1
    return WarmUp(calls, statistics.median(call_times or [t2 - t0]), statistics.median(issue_times or [t1 - t0]))


PROFILED_CALLS = 3
"""Calls profiled for a case's kernels, each after a cache flush (outside the profile), as
the timed reps are."""


def kernel_launches(run: Callable[[], Any], device: Device,
                    flush: Callable[[], None]) -> tuple[list[str], list[dict] | None]:
    """The device kernels (and copies or fills) one call launches, read with the PyTorch
    profiler (CUPTI) over :data:`PROFILED_CALLS` calls, each after ``flush``: their names in
    order of first launch, and each launch of one call with its device time
    (:func:`launch_times`)."""
    from torch.profiler import ProfilerActivity, profile

    kernels = []
    for _ in range(PROFILED_CALLS):
        flush()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            run()
            device.sync()
        kernels += sorted(((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                           if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda k: k[0])
    names: list[str] = []
    for _, _, name in kernels:
        if name not in names:
            names.append(name)
    return names, launch_times([(name, (end - start) * 1e-6) for start, end, name in kernels], PROFILED_CALLS)


def launch_times(launches: list[tuple[str, float]], calls: int) -> list[dict] | None:
    """Each kernel one call launches, in order, with its device time in seconds (the median
    over ``calls`` calls whose ``launches`` are given in launch order); None when the calls
    did not launch the same kernels (a first call that autotunes, say)."""
    if not launches or len(launches) % calls:
        return None
    per_call = len(launches) // calls
    rounds = [launches[i * per_call:(i + 1) * per_call] for i in range(calls)]
    if any([name for name, _ in r] != [name for name, _ in rounds[0]] for r in rounds):
        return None
    return [{"name": name, "device_s": float(f"{statistics.median(r[j][1] for r in rounds):.6g}")}
            for j, (name, _) in enumerate(rounds[0])]


# --------------------------------------------------------------------------- the sweep


@dataclass
class Run:
    """Everything one invocation shares across families."""

    device: Device
    policy: Policy
    scale: str
    timer: Timer
    out_dir: Path
    deadline: float
    with_kernel_names: bool
    provenance: dict
    files: list[FamilyFile] = field(default_factory=list)
    clocks: ClockSampler = field(default_factory=lambda: ClockSampler(None))
    """Reads the SM clock during each case's timed reps (:func:`measure_case`)."""


def ramp_clocks(device: Device, seconds: float = 1.0) -> None:
    """Keep the GPU busy for a moment so that the first cases do not run at idle clocks."""
    if not device.on_gpu:
        return
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device.torch_device)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        torch.matmul(a, a)
        device.sync()


def measure_case(family: str, p: dict, prepared: Prepared, run: Run, config: dict | None = None,
                 tag: str | None = None) -> dict:
    """Warm up, time and describe one case; ``config`` and ``tag`` for our own tunable kernels."""
    warm = warm_up(prepared.run, run.device, run.policy)
    cushion_s = 0.0
    if run.device.on_gpu:
        cushion_s = min(MAX_CUSHION_S, max(0.0, 2 * warm.issue_s - run.timer.flush_s))
    per_rep = warm.call_s + run.timer.flush_s
    reps = min(run.policy.max_reps, max(run.policy.min_reps, math.ceil(run.policy.target_s / per_rep)))
    with run.clocks.during() as readings:
        samples = run.timer.samples(prepared.run, reps, cushion_s)
    clock = clock_summary(readings)
    names = launches = None
    if run.with_kernel_names and run.device.on_gpu:
        try:
            names, launches = kernel_launches(prepared.run, run.device, run.timer.flush)
        except Exception as exc:  # the profiler is a nicety: never lose a measurement to it
            print(f"  kernel names unavailable ({type(exc).__name__}); not reading them again", flush=True)
            run.with_kernel_names = False
    return {
        "id": fmt.record_id(family, p, tag),
        "family": family,
        "implementation": prepared.implementation,
        "params": p,
        **({"config": config} if config is not None else {}),
        "latency_s": statistics.median(samples),
        "samples_s": samples,
        "flops": fmt.nominal_flops(family, p),
        "bytes": fmt.min_bytes(family, p),
        "measured": True,
        "source": f"{run.provenance['source'].split()[-1]} on {run.device.info['name']}, {run.provenance['date']}",
        "notes": prepared.notes + f"; {reps} reps after {warm.calls} warm-up calls, caches flushed before each rep"
        + (f", launch cushion {cushion_s * 1e6:.0f} us" if cushion_s else "") + clock_note(clock),
        "kernels": names,
        **({"kernel_device_s": launches} if launches else {}),
        **clock_fields(clock),
        # Timer._flush fills the buffer: the L2 starts each rep full of its dirty lines
        **({"cache_flush": {"bytes": run.timer.policy.flush_bytes, "access": "write"}} if run.device.on_gpu else {}),
    }



def _throughput(record: dict) -> str:
    latency = record["latency_s"]
    if record["family"] in ("gemm", "attention"):
        return f"{record['flops'] / latency / 1e12:8.1f} TFLOP/s"
    return f"{record['bytes'] / latency / 1e9:8.1f} GB/s"


def run_family(family: str, run: Run) -> FamilyFile:
    plan = PLANS[family](run.scale)
    provenance = run.provenance | {"clocks": {"before": read_gpu_state() if run.device.on_gpu else None}}
    file = FamilyFile(run.out_dir / f"{family}.json", family, run.device.info, provenance)
    run.files.append(file)
    print(f"{family}: {len(plan)} cases", flush=True)
    checks: dict[str, dict] = {}
    for index, p in enumerate(plan):
        key = fmt.record_id(family, check_params(family, p))
        if key not in checks:
            checks[key] = run_check(family, p, run.device)
            file.checks.append(checks[key])
        check = checks[key]
        if not check["passed"]:
            file.skip(p, f"correctness check {key} failed: {check.get('error') or check['rel_error']}")
            continue
        estimate = 1.5 * estimate_case_s(family, p, run.policy, run.device.on_gpu)
        if time.monotonic() + estimate > run.deadline:
            file.skip(p, f"time budget: about {estimate:.1f} s needed, {max(0.0, run.deadline - time.monotonic()):.1f} s left")
            continue
        torch.manual_seed(1000 + index)
        try:
            prepared = PREPARE[family](p, run.device)
            record = measure_case(family, p, prepared, run)
        except Exception as exc:  # out of memory, an unsupported shape: the sweep goes on
            file.skip(p, f"{type(exc).__name__}: {exc}".splitlines()[0])
            record = None
        finally:
            prepared = None
            if run.device.on_gpu:
                torch.cuda.empty_cache()
        if record:
            file.records.append(record)
            print(f"  {record['id']:<52} {record['latency_s'] * 1e3:10.4f} ms {_throughput(record)}", flush=True)
        file.write()
    file.provenance["clocks"]["after"] = read_gpu_state() if run.device.on_gpu else None
    file.write()
    return file


def print_summary(run: Run) -> None:
    """The library suite's table (the last table of a ``--suites library`` run)."""
    print()
    print(f"{'family':<10} {'measured':>8} {'skipped':>8}  best")
    for file in run.files:
        best = max(file.records, key=lambda r: (r["flops"] or r["bytes"]) / r["latency_s"], default=None)
        shown = f"{best['id']}  {_throughput(best).strip()}" if best else "-"
        print(f"{file.family:<10} {len(file.records):>8} {len(file.skipped):>8}  {shown}")
    failed = [c for f in run.files for c in f.checks if not c["passed"]]
    for check in failed:
        print(f"check failed: {check['id']}: {check.get('error') or check['rel_error']}")


# --------------------------------------------------------------------------- the other suites

SUITES = ("library", "triton", "pallas", "collectives", "micro")
"""Run in this order. The later four run as child processes (JAX and PyTorch never share a
process, Triton's CPU interpreter must be chosen before triton is imported, and a crash
there loses only that suite's open case)."""
SUITE_RESERVE_S = {"triton": {"gpu": 140.0, "gpu-quick": 30.0, "cpu": 60.0, "cpu-quick": 45.0},
                   "pallas": {"gpu": 140.0, "gpu-quick": 45.0, "cpu": 45.0, "cpu-quick": 35.0},
                   "collectives": {"gpu": 40.0, "gpu-quick": 40.0, "cpu": 40.0, "cpu-quick": 35.0},
                   "micro": {"gpu": 5.0, "gpu-quick": 5.0, "cpu": 10.0, "cpu-quick": 10.0}}
"""Seconds kept back for each later suite when the library sweep has a budget: ~58 Triton
cases (8 of them the attention backward, 16 the decode-shaped GEMM) at ~2.5 s (compile, check, time); JAX start-up and ~60 Pallas cases at ~2 s (the TPU-style matmul
and attention cases fail to lower within a second or two); two interpreter start-ups for
the collectives and, with 8 GPUs, a 1 KiB..8 GiB sweep of three collectives (105 calls a
size; at ~450 GB/s of bus bandwidth, 8 H100s over NVLink, ~15 s; slower links reach the
budget and skip the largest sizes with that reason); ~17 microbenchmark cases at well under
a second each (on one GPU the collectives suite ends in seconds, leaving it more).
Estimates, not measurements: no suite but the library one has run on a GPU yet."""


def suite_commands(suite: str, kind: str, quick: bool, out_dir: Path) -> list[list[str]]:
    device = ["--device", "gpu" if kind == "cuda" else "cpu"] + (["--quick"] if quick else [])
    python = [sys.executable]
    if suite == "triton":
        return [python + [str(HERE / "measure_triton.py"), "--out", str(out_dir / "triton"), *device]]
    if suite == "pallas":
        return [python + [str(HERE / "measure_pallas.py"), "--out", str(out_dir / "pallas"), *device]]
    if suite == "micro":
        return [python + [str(HERE / "measure_micro.py"), "--out", str(out_dir / "micro"), *device]]
    script = str(HERE / "measure_collectives.py")
    return [python + [script, "--backend", backend, "--out", str(out_dir / "collectives"), *device]
            for backend in ("torch", "jax")]


def suite_env(kind: str) -> dict:
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONUNBUFFERED="1")
    if kind == "cpu":  # Triton's interpreter; eight host devices, so the JAX collectives path runs
        env["TRITON_INTERPRET"] = "1"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    return env


def run_child(command: list[str], deadline: float, env: dict) -> None:
    """One child suite, with what is left of the budget; its files stay even if it fails."""
    left = deadline - time.monotonic()
    if left < 10:
        print(f"not started (time budget): {shlex.join(command[1:])}", flush=True)
        return
    if math.isfinite(left):
        command = command + ["--budget-s", f"{left - 5:.0f}"]
    print(f"$ {shlex.join(command[1:])}", flush=True)
    try:
        done = subprocess.run(command, env=env, timeout=left + 30 if math.isfinite(left) else None)
    except subprocess.TimeoutExpired:
        print("  stopped at the time budget; its finished cases are on disk", flush=True)
        return
    if done.returncode != 0:
        print(f"  exited with status {done.returncode}; its finished cases are on disk", flush=True)


def write_bundle(out_dir: Path, bundle: Path) -> None:
    """All measurement files of ``out_dir`` as one .tar.gz (a lease returns at most 8 files)."""
    bundle.parent.mkdir(parents=True, exist_ok=True)
    tmp = bundle.with_name(f".{bundle.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(out_dir.rglob("*.json")):
            if _measurement_file(path) is not None:
                tar.add(path, arcname=str(Path(out_dir.name) / path.relative_to(out_dir)))
    tmp.replace(bundle)


def _measurement_file(path: Path) -> dict | None:
    """``path`` decoded when it is one of ours (records and skipped cases), else None: a folder
    may hold other JSON, which the table and the bundle leave alone."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ours = isinstance(data, dict) and isinstance(data.get("records"), list) and isinstance(data.get("skipped"), list)
    return data if ours else None


def print_final_table(out_dir: Path, device_name: str) -> None:
    """One line per file written under ``out_dir``: what was measured and skipped, and why."""
    print()
    print(f"{'file':<26} {'measured':>8} {'skipped':>8}  first skip reason")
    for path in sorted(out_dir.rglob("*.json"), key=lambda p: (len(p.relative_to(out_dir).parts), str(p))):
        data = _measurement_file(path)
        if data is None:
            continue
        reason = data["skipped"][0]["reason"][:70] if data["skipped"] else "-"
        print(f"{str(path.relative_to(out_dir)):<26} {len(data['records']):>8} {len(data['skipped']):>8}  {reason}")
    print(f"{device_name}: {time.monotonic() - STARTED:.0f} s; files in {out_dir}")


# --------------------------------------------------------------------------- command line


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto: the GPU if there is one, else the CPU at tiny sizes")
    parser.add_argument("--quick", action="store_true", help="a few points per family (smoke run)")
    parser.add_argument("--budget-s", type=budget_seconds, default=None,
                        help="stop starting new cases when this many seconds since start are nearly spent")
    parser.add_argument("--out", type=out_folder, default=None,
                        help="output folder (default: validation/measurements/<device-slug>/)")
    parser.add_argument("--families", default=",".join(PLANS),
                        help=f"comma-separated, from: {', '.join(PLANS)} (default: all)")
    parser.add_argument("--no-kernel-names", action="store_true",
                        help="do not profile one call per case to record the kernels it launches")
    parser.add_argument("--estimate", action="store_true",
                        help="print the plan and its estimated run time, measure nothing")
    parser.add_argument("--suites", default=",".join(SUITES),
                        help=f"comma-separated, from: {', '.join(SUITES)} (default: all; --families selects within library)")
    parser.add_argument("--bundle", type=Path, default=None, metavar="FILE.tar.gz",
                        help="also write every file as one archive, after each suite (for a lease's $OUT)")
    args = parser.parse_args(argv)
    if args.bundle is not None:  # asked now: it is written after each suite, and a GPU lease is short
        if not str(args.bundle).strip() or args.bundle.is_dir():
            parser.error(f"--bundle: expected a file path, got {str(args.bundle)!r}")
        try:
            out_folder(str(args.bundle.parent))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--bundle: {exc}")
    suites = [x.strip() for x in args.suites.split(",") if x.strip()]
    if not suites or any(x not in SUITES for x in suites):
        parser.error(f"--suites: expected some of: {', '.join(SUITES)}; got {args.suites!r}")
    args.suites = [x for x in SUITES if x in suites]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in PLANS]
    if unknown or not families:
        parser.error(f"--families: unknown {unknown or 'empty list'}; expected some of: {', '.join(PLANS)}")
    args.families = [f for f in PLANS if f in families]
    return args


def choose_device(requested: str, estimate_only: bool) -> str:
    if requested == "cpu":
        return "cpu"
    if requested == "cuda" and (estimate_only or torch.cuda.is_available()):
        return "cuda"
    if requested == "cuda":
        print("measure_gpu.py: error: --device cuda but torch sees no GPU", file=sys.stderr)
        sys.exit(2)
    if torch.cuda.is_available():
        return "cuda"
    print(f"no GPU visible to torch: {'the plan for' if estimate_only else 'measuring'} the CPU at tiny sizes",
          flush=True)
    return "cpu"


def print_estimate(families: list[str], scale: str, policy: Policy, on_gpu: bool) -> None:
    total = STARTUP_S["gpu" if on_gpu else "cpu"]
    print(f"plan {scale}: start-up {total:.0f} s")
    for family in families:
        plan = PLANS[family](scale)
        seconds = sum(estimate_case_s(family, p, policy, on_gpu) for p in plan)
        kernels = sum(estimate_kernel_s(family, p, on_gpu) for p in plan)
        print(f"  {family:<10} {len(plan):4d} cases  {seconds:6.1f} s  (one call of each: {kernels * 1e3:.1f} ms)")
        total += seconds
    for suite, reserve in SUITE_RESERVE_S.items():
        print(f"  {suite:<10} (child process) {reserve['gpu' if on_gpu else 'cpu']:6.1f} s kept back")
        total += reserve["gpu" if on_gpu else "cpu"]
    print(f"estimated total: {total:.0f} s")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kind = choose_device(args.device, args.estimate)
    scale = ("gpu" if kind == "cuda" else "cpu") + ("-quick" if args.quick else "")
    policy = POLICIES[scale]
    if args.estimate:
        print_estimate(args.families, scale, policy, kind == "cuda")
        return 0
    device = describe_device(kind)
    out_dir = args.out or HERE / "measurements" / device.info["slug"]
    provenance = {
        "date": now_utc(),
        "command": command_line(argv),
        "versions": library_versions(device),
        "settings": torch_settings(),
        "clocks": {},
        "source": "accelsim validation/measure_gpu.py",
        "timing": {
            "method": "cuda-events" if device.on_gpu else "perf_counter",
            "statistic": "median",
            "cache_flush_bytes": policy.flush_bytes,
            "scale": scale,
        },
    }
    if device.on_gpu:
        nvidia = read_gpu_state() or {}
        provenance["versions"]["driver"] = nvidia.get("driver_version")
        ramp_clocks(device)
    budget_end = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
    reserve = sum(SUITE_RESERVE_S[x][scale] for x in args.suites if x != "library")
    print(f"{device.info['name']} ({device.info['arch'] or 'no accelsim config'}) -> {out_dir}", flush=True)
    if "library" in args.suites:
        timer = Timer(device, policy)
        provenance["timing"]["cache_flush_s"] = timer.flush_s
        run = Run(device, policy, scale, timer, out_dir, budget_end - reserve, not args.no_kernel_names, provenance,
                  clocks=clock_sampler(device))
        for family in args.families:
            run_family(family, run)
        print_summary(run)
        run.timer = timer = None
        if device.on_gpu:
            torch.cuda.empty_cache()  # the children need the memory
        if args.bundle:
            write_bundle(out_dir, args.bundle)
    for suite in args.suites[args.suites.index("library") + 1 if "library" in args.suites else 0:]:
        for command in suite_commands(suite, kind, args.quick, out_dir):
            run_child(command, budget_end, suite_env(kind))
        if args.bundle:
            write_bundle(out_dir, args.bundle)
    print_final_table(out_dir, device.info["name"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
