#!/usr/bin/env python3
"""Convert the public measurements into reference files in the measurement format.

Reads ``shared/reference/public_measurements.json`` (a list of records compiled from
papers, vendor documents and benchmark repositories; see its README) and this folder's
``added_measurements.yaml`` (public measurements compiled here, same record schema), and
writes, for
every (device, kernel family) it can convert, ``validation/reference/<arch>/<family>.json``
in the format of ``docs/measurement-format.md``: the same files ``measure_gpu.py`` writes,
so that one comparison reads both.

Kernel measurements and microbenchmarks on devices that have an accelsim config are converted. Every
record keeps its ``source`` and ``notes``; where the source gives a throughput, not a time,
``latency_s`` is derived from it with the format's own flop or byte count and the notes
say so. Every input record that is left out is counted under a reason, printed at the end
and listed in ``validation/reference/README.md``.

    python3 validation/reference/build_reference.py [--input PATH] [--added PATH] [--out DIR]

The output is deterministic (no dates, records sorted by id): rerunning it on the same
input leaves the committed files unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import measurement_format as fmt  # noqa: E402  (validation/measurement_format.py)
import microbenchmark_format as micro_fmt  # noqa: E402  (validation/microbenchmark_format.py)

ADDED = HERE / "added_measurements.yaml"
"""Public measurements compiled in this repository beyond the shared file, in its record schema
(``{"about": ..., "records": [...]}``); converted with it."""

INPUT_CANDIDATES = (
    REPO / "shared" / "reference" / "public_measurements.json",
    REPO.parent / "shared" / "reference" / "public_measurements.json",
)

ARCH_BY_HARDWARE: dict[str, str] = {
    "NVIDIA H100 SXM": "h100-sxm",
    "NVIDIA H100 80GB HBM3 (SXM5)": "h100-sxm",
    "NVIDIA H100 80GB SXM5": "h100-sxm",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H200 SXM": "h200-sxm",
    "NVIDIA H200 (HBM3e, 4.8 TB/s spec)": "h200-sxm",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA A100-SXM4-80GB (2.039 TB/s spec)": "a100-sxm4-80gb",
    "NVIDIA A100 SXM": "a100-sxm4-80gb",
    "NVIDIA A100-SXM4-40GB (1.555 TB/s spec)": "a100-sxm4-40gb",
    "NVIDIA H100 PCIe (HBM2e, 2.0 TB/s spec)": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA B200 SXM": "b200",
    "NVIDIA GB200 SXM": "gb200",
    "NVIDIA B300 SXM": "b300",
    "NVIDIA GH200 SXM": "gh200",
    "NVIDIA GH200 SXM (900W, 141GiB HBM3e)": "gh200",
    "AMD MI300X": "mi300x",
    "NVIDIA H100 (vLLM PR #49363)": "h100-sxm",
    "Google TPU v5e (JAX Pallas TPU guide)": "tpu-v5e",
    "NVIDIA H200 (TileOPs GQA decode doc)": "h200-sxm",
    # microbenchmark records (gpu-benches' gpu-latency, gpu-cache and gpu-l2-cache runs)
    "NVIDIA H100 PCIe (114 SMs)": "h100-pcie",
    "NVIDIA H100 PCIe (114 SMs @1755MHz)": "h100-pcie",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA A100-SXM4-80GB (108 SMs @1410MHz)": "a100-sxm4-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA H800 SXM5 (DeepGEMM README)": "h100-sxm",
    "NVIDIA H100 (pytorch/benchmark PR #2391)": "h100-sxm",
    "NVIDIA H100 (Modal, ai-bot-pro/achatbot PR 123)": "h100-sxm",
    "NVIDIA B200 (flash-attention PR 2605)": "b200",
    "NVIDIA H200 (cudnn-frontend attention_inference)": "h200-sxm",
    "NVIDIA B200 (cudnn-frontend attention_inference)": "b200",
    "NVIDIA GB200 (cudnn-frontend sdpa_benchmark_training)": "gb200",
    "NVIDIA H200 (cudnn-frontend sdpa_benchmark_training)": "h200-sxm",
    "NVIDIA B200 (Liger-Kernel benchmark CSV)": "b200",
}
"""Source hardware names -> accelsim configs. Names absent here (PCIe cards other than the H100 runs,
MI325X/MI355X, Gaudi) have no config and their records are left out."""

FROM_IDLE_NOTE = (
    "The timing tool runs each timed call alone: it zeroes a 256 MiB buffer, opens a torch profiler window, "
    "runs the call, synchronizes and reads the window's kernels on the host before the next call, so each call "
    "starts on a GPU that idled (conditions: power.dvfs.boost.from_idle, docs/power.md 'The limiter's delay': "
    "a call over the power limit keeps the boost clock for the limiter's delay, not the capped clock throughout)"
)
"""The note of :data:`FROM_IDLE` records."""

HARDWARE_NOTES: dict[str, str] = {
    "NVIDIA H100 (pytorch/benchmark PR #2391)": (
        "the PR says no more than that FA3 ran (a Hopper card); mapped to h100-sxm: at these sizes its FA3 is "
        "within 4-8% of the FA3 paper's H100 SXM5 bars, beyond what an H100 PCIe's 114 SMs reach"
    ),
    "NVIDIA A100 SXM": (
        "source says 'A100 SXM' without the memory size; mapped to a100-sxm4-80gb: the 40 GB and 80 GB "
        "parts have the same 312 TFLOP/s bf16 peak and this shape is compute-bound"
    ),
    "NVIDIA GH200 SXM": (
        "source does not say which GH200 memory version; mapped to gh200 (144 GB HBM3e): the 96 GB HBM3 "
        "version has the same GPU and tensor-core peaks, and this shape is compute-bound"
    ),
    "NVIDIA GH200 SXM (900W, 141GiB HBM3e)": (
        "the source's table names this GH200's power setting, 900 W (the module is configurable from 450 W "
        "to 1000 W for the Grace CPU, its memory and the GPU together, GH200 datasheet 2024); the record says so "
        "(conditions: power.tdp), so its clock is held under 900 W, not the config's 700 W; the whole 900 W is "
        "given to the GPU, the CPU idling during a GEMM (not stated by the source)"
    ),
    "NVIDIA H100 (vLLM PR #49363)": (
        "the PR says 'H100' without the form factor; mapped to h100-sxm: M=1 at N=43008 reads its 462 MB of "
        "weights at 3.07 TB/s, above an H100 PCIe's 2.0 TB/s peak (an H100 NVL, 3.9 TB/s, is not ruled out)"
    ),
    "NVIDIA GB200 (cudnn-frontend sdpa_benchmark_training)": (
        "gpu_name 'NVIDIA GB200': the Blackwell GPU of a GB200 superchip; mapped to gb200 (its 1200 W, 152-SM part). "
        "The CSV does not say which GB200 system, power limit or clocks ran"
    ),
    "NVIDIA H200 (cudnn-frontend sdpa_benchmark_training)": (
        "gpu_name 'NVIDIA H200' does not say SXM or NVL (the same 4.8 TB/s HBM3e); mapped to h200-sxm, as this "
        "repository's other cudnn-frontend H200 records are. " + FROM_IDLE_NOTE
    ),
    "NVIDIA H200 (cudnn-frontend attention_inference)": FROM_IDLE_NOTE,
    "NVIDIA B200 (Liger-Kernel benchmark CSV)": (
        "gpu_name 'NVIDIA B200', the driver name of the HGX B200 (SXM) GPU; mapped to b200"
    ),
    "NVIDIA H200 (TileOPs GQA decode doc)": (
        "the doc says 'H200' with a 700 W power limit, the SXM part's; mapped to h200-sxm. Its SM clock was "
        "locked at 1500 MHz, below the config's 1.83 GHz: the record says so (conditions: clock), so it is "
        "predicted at 1500 MHz; HBM's clock (3201 MHz) was not lowered"
    ),
    "NVIDIA H800 SXM5 (DeepGEMM README)": (
        "H800 SXM5 mapped to h100-sxm: the same GH100 with 132 SMs, the same clocks, tensor-core peaks, 50 MB L2 "
        "and 80 GB of HBM3 at 3.35 TB/s; what differs (NVLink, 400 GB/s, and FP64) does not touch a GEMM"
    ),
    "NVIDIA H200 (HBM3e, 4.8 TB/s spec)": (
        "source names the card 'H200' without its form factor; mapped to h200-sxm (the NVL card has the "
        "same 4.8 TB/s HBM3e), as arch_configs/gpu/h200-sxm.yaml already does for this repository's data"
    ),
    "NVIDIA H200": (
        "source names the card 'H200' without its form factor; mapped to h200-sxm (the NVL card has the "
        "same 4.8 TB/s HBM3e), as arch_configs/gpu/h200-sxm.yaml already does for this repository's data"
    ),
}

DERIVED_VALUES: dict[tuple[str, str], tuple[str, ...]] = {
    ("a100-sxm4-80gb", "elementwise-fp64-0in1out-134217730--gpu-stream-init"): ("hbm.efficiency",),
    ("a100-sxm4-80gb", "gemm-bf16-1024x10240x5120--mamf"): ("matrix_unit.efficiency",),
    ("h200-sxm", "elementwise-fp64-0in1out-134217730--gpu-stream-init"): ("hbm.efficiency",),
    ("b200", "gemm-bf16-1792x16128x3072--mamf"): ("matrix_unit.efficiency",),
    ("b200", "gemm-fp8-15360x4096x3072--mamf"): ("matrix_unit.efficiency",),
    ("mi300x", "gemm-bf16-10240x15360x8192--mamf"): ("matrix_unit.efficiency",),
}
"""Records a published value of their chip's config was derived from (the config's
``source`` quotes them), written as the record's ``informs``: ``validate`` counts them as
touched by a fit, never in a headline (``docs/accuracy.md``)."""

GPU_STREAM_ELEMENTS = 128 * 1024 * 1024 + 2
"""gpu-stream/main.cu: ``max_buffer_size = 128l * 1024 * 1024 + 2`` doubles per array (read at the
stored commits a7dc559 and fd7091f, which agree; the cited 1c36d509 itself was not read)."""


@dataclass(frozen=True)
class Converted:
    arch: str
    family: str
    record: dict


@dataclass(frozen=True)
class LeftOut:
    reason: str


Outcome = Converted | LeftOut | None
"""None: this converter does not handle the record; the next one is tried."""


DO_BENCH_FLUSH = {"bytes": 256_000_000, "access": "write"}
"""``triton.testing.do_bench`` zeroes a buffer before each timed call to clear the L2
(python/triton/testing.py: ``cache.zero_()``; 256e6 bytes in Triton 2.x, 256 MiB from the
drivers' ``get_empty_cache_for_benchmark`` in 3.x; either is several L2s), which leaves the L2
full of dirty lines."""
TILEOPS_FLUSH = {"bytes": 52_428_800, "access": "write"}
"""TileOPs' ``bench_kernel`` (benchmarks/benchmark_base.py, read at 046da58d): ``zero_()`` of a
buffer of the device's ``L2_cache_size`` bytes (50 MiB on an H200), then a synchronize, before
each profiled call."""
FLUSH_NOTE = ("cache_flush: the timing tool writes {:.3g} bytes before each timed call, leaving the L2 full of "
              "dirty lines")


FROM_IDLE = {"power.dvfs.boost.from_idle": "true"}
"""A timing tool that runs each timed call alone on a GPU that idled before it (docs/power.md, "The
limiter's delay"): cudnn-frontend's ``benchmark_single_sdpa.py`` (read at 3929da2e, the training
records' commit) and ``benchmark_single_attention.py`` (as stored, @91159779: "Timing mirrors the
training suite") zero a 256 MiB buffer, open a torch profiler window, run one call, synchronize, close
the window and read its kernels on the host (``prof.key_averages()``) before the next call. On chips
whose config has the boost section (Hopper); elsewhere no power limiter is modelled."""

HARDWARE_CONDITIONS: dict[str, dict[str, str]] = {
    "NVIDIA GH200 SXM (900W, 141GiB HBM3e)": {"power.tdp": "900 W"},
    "NVIDIA H200 (cudnn-frontend sdpa_benchmark_training)": FROM_IDLE,
    "NVIDIA H200 (cudnn-frontend attention_inference)": FROM_IDLE,
}
"""How a source's device ran where the source's own name for it (or its timing tool, which these
names carry) says so (its HARDWARE_NOTES entry explains each): applied to every record of that
device as the record's ``conditions``."""


def _record(family: str, params: dict, *, tag: str, implementation: str, latency_s: float, raw: dict, notes: list[str],
            config: dict | None = None, latency_kind: str | None = None, conditions: dict | None = None,
            cache_flush: dict | None = None) -> dict:
    hardware_note = HARDWARE_NOTES.get(raw["hardware"])
    conditions = (conditions or {}) | HARDWARE_CONDITIONS.get(raw["hardware"], {})
    all_notes = [n for n in [raw["notes"].strip(), *notes, hardware_note] if n]
    joined = ""
    for note in all_notes:  # the source's own notes verbatim, then ours
        joined += ("" if not joined else " " if joined.endswith(".") else "; ") + note
    return {
        "id": fmt.record_id(family, params, tag),
        "family": family,
        "implementation": implementation,
        "params": params,
        "latency_s": float(f"{latency_s:.12g}"),
        "samples_s": [],
        "flops": fmt.nominal_flops(family, params),
        "bytes": fmt.min_bytes(family, params),
        "measured": True,
        "source": raw["source"],
        "notes": joined,
        "hardware": raw["hardware"],
    } | ({"config": config} if config else {}) | ({"latency_kind": latency_kind} if latency_kind else {}) | (
        {"conditions": conditions} if conditions else {}) | ({"cache_flush": cache_flush} if cache_flush else {})


def _arch_or_reason(raw: dict) -> str | LeftOut:
    arch = ARCH_BY_HARDWARE.get(raw["hardware"])
    if arch is not None:
        return arch
    if "PCIe" in raw["hardware"]:
        return LeftOut("PCIe card: no accelsim config (the SXM configs have other SM counts, clocks and memory)")
    return LeftOut(f"no accelsim config for {raw['hardware']}")


def _added_source(raw: dict, *, category: str, marker: str, field: str, unit: str, what: str) -> str | Outcome:
    """For a converter of one source of ``added_measurements.yaml``: None when ``raw`` is not
    that source's (``marker`` not in its ``field``), a LeftOut when it is in another unit
    than ``unit`` or on a device without a config, else the accelsim arch."""
    if raw["category"] != category or marker not in raw[field]:
        return None
    if raw["unit"] != unit:
        return LeftOut(f"{what} record in {raw['unit']!r}, expected {unit}")
    return _arch_or_reason(raw)


def _tflops_latency(flops: float, tflops: float) -> tuple[float, str]:
    return flops / (tflops * 1e12), f"latency_s derived from {tflops:g} TFLOP/s and the format's flop count ({flops:.6g})"


def convert_mamf(raw: dict) -> Outcome:
    """ml-engineering's mamf-finder: the best shape of a brute-force search and its TFLOP/s."""
    if raw["category"] != "gemm" or "mamf-finder" not in raw["workload"]:
        return None
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    par = raw["parameters"]
    M, N, K = (int(x) for x in par["best_shape_MxNxK"].split("x"))
    dtype = {"bf16": "bf16", "fp8_e4m3fn": "fp8"}[par["dtype"]]
    params = {"M": M, "N": N, "K": K, "dtype": dtype, "batch": 1} | (
        {"impl": "cublas"} if raw["hardware"] in CUBLAS_KERNELS_MAPPED else {})
    latency, how = _tflops_latency(fmt.nominal_flops("gemm", params), raw["value"])
    notes = [how + " = 2*M*N*K", f"torch {par['torch']}", f"source's theoretical peak {par['theoretical_TFLOPS']} TFLOP/s"]
    return Converted(arch, "gemm", _record("gemm", params, tag="mamf", implementation=raw["workload"], latency_s=latency, raw=raw, notes=notes))


CUBLAS_KERNELS_MAPPED = frozenset(("NVIDIA H100 SXM",))
"""mamf-finder devices whose records name ``impl: cublas`` (torch.mm runs cuBLAS): those whose
cuBLAS model has been checked (the Hopper SMs); the others keep the family's default."""

CUBLAS_BENCH_DTYPES = (
    (r"FP16 in / FP32 accumulate", "fp16", "cublas"),
    (r"FP32 in, TF32 compute", "tf32", "cublas"),
    (r"cublasSgemm FP32", "fp32", "cublas"),
    (r"CUTLASS wgmma kernel FP16", "fp16", "cutlass-wgmma"),
)
"""waynehacking8/blackwell-tensorcore-kernels' bench rows: every one writes an fp32 C
(src/cublas_tc.cu: ``CUDA_R_32F`` output; src/cutlass_sm90.cu: ``ElementC = float``)."""

CUTLASS_WGMMA_CONFIG = {"block_m": 128, "block_n": 256, "block_k": 64, "cluster": 2, "schedule": "cooperative"}
"""The repository's CUTLASS kernel as src/cutlass_sm90.cu @fd74d2ac builds it: ``TileShape``
128x256x64, ``ClusterShape`` 2x1x1, ``KernelScheduleAuto`` (CUTLASS's sm90 builder: cooperative
for a tile of 128 rows or more) and the default (data-parallel) persistent tile scheduler."""


SGEMM_HANDLE_REASON = (
    "times a cuBLAS handle's creation and destruction with every call, not the kernel (waynehacking8/"
    "blackwell-tensorcore-kernels' SGEMM rows @fd74d2ac; docs/kernels-gemm.md, 'Records that time more than the kernel')")
"""Why the fp32 rows of that repository's ``results/bench_sm90a.csv`` are left out: at fd74d2ac its
``src/reference.cu`` calls ``cublasCreate`` and ``cublasDestroy`` inside every timed call (cached only
from 07cbf03, "Cache cuBLAS handle in reference.cu (removes per-call overhead)", after which the
H100 CSV was not re-run), and ``cublasDestroy`` synchronizes the device (cuBLAS docs, ``cublasCreate``:
the release of its resources "will implicitly call cudaDeviceSynchronize()"). The same repository's
Nsight Systems kernel summaries time the SGEMM kernel alone (:func:`convert_nsys_kernel_summary`).
The tensor-core rows (``src/cublas_tc.cu``, ``src/cublas_tf32.cu``) kept one handle at that commit."""


def convert_fixed_shape_gemm(raw: dict) -> Outcome:
    """A GEMM at a stated M, N, K with its TFLOP/s (and a rounded time)."""
    par = raw["parameters"]
    if raw["category"] != "gemm" or not {"M", "N", "K"} <= set(par):
        return None
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    for pattern, dtype, tag in CUBLAS_BENCH_DTYPES:
        if re.search(pattern, raw["workload"]):
            break
    else:
        return LeftOut("GEMM whose dtype the converter does not recognise")
    params = {"M": par["M"], "N": par["N"], "K": par["K"], "dtype": dtype, "batch": 1} | (
        {"out_dtype": "fp32"} if dtype == "fp16" else {}) | ({"impl": "cutlass"} if tag == "cutlass-wgmma" else
                                                          {"impl": "cublas"})
    latency, how = _tflops_latency(fmt.nominal_flops("gemm", params), raw["value"])
    notes = [how + " = 2*M*N*K", f"the source's time_ms {par['time_ms']} is rounded to 3 decimals, so the throughput is used",
             "C is written in fp32"]
    if dtype == "fp32" and "bench_sm90a.csv @fd74d2ac" in raw["source"]:
        return LeftOut(SGEMM_HANDLE_REASON)
    config = CUTLASS_WGMMA_CONFIG if tag == "cutlass-wgmma" else None
    return Converted(arch, "gemm", _record("gemm", params, tag=tag, implementation=raw["workload"], latency_s=latency,
                                           raw=raw, notes=notes, config=config))


NSYS_GEMM_DTYPES = (("cublasSgemm", "fp32"), ("TF32 compute", "tf32"), ("FP16 in / FP32 accumulate", "fp16"))
"""The cuBLAS calls of waynehacking8/blackwell-tensorcore-kernels' bench, by their workload text."""


def convert_nsys_kernel_summary(raw: dict) -> Outcome:
    """A cuBLAS kernel's median device time from an Nsight Systems ``cuda_gpu_kern_sum`` table
    (waynehacking8/blackwell-tensorcore-kernels ``results/nsys_kern_sum_<size>.txt``)."""
    arch = _added_source(raw, category="gemm", marker="cuda_gpu_kern_sum", field="workload", unit="ns",
                         what="Nsight Systems kernel summary")
    if not isinstance(arch, str):
        return arch
    dtype = next((d for pattern, d in NSYS_GEMM_DTYPES if pattern in raw["workload"]), None)
    if dtype is None:
        return LeftOut("GEMM whose dtype the converter does not recognise")
    par = raw["parameters"]
    params = {"M": par["M"], "N": par["N"], "K": par["K"], "dtype": dtype, "batch": 1} | (
        {"out_dtype": "fp32"} if dtype == "fp16" else {}) | {"impl": "cublas"}
    notes = [f"latency_s is the source's median device time of the kernel over its {par['instances']} launches "
             "(latency_kind: device)", "C is written in fp32"]
    return Converted(arch, "gemm", _record("gemm", params, tag="cublas-nsys", implementation=raw["workload"],
                                           latency_s=raw["value"] * 1e-9, raw=raw, notes=notes,
                                           latency_kind="device"))


def convert_vllm_linear(raw: dict) -> Outcome:
    """vLLM's fp8 GEMM benchmark, its torch-bf16 column: ``F.linear`` (cuBLAS) at decode-sized M."""
    arch = _added_source(raw, category="gemm", marker="benchmark_fp8_gemm.py", field="workload", unit="TFLOP/s",
                         what="vLLM GEMM benchmark")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    params = {**fmt.gemm_params(par["M"], par["N"], par["K"], par["dtype"]), "impl": "cublas"}
    latency, how = _tflops_latency(fmt.nominal_flops("gemm", params), raw["value"])
    notes = [how + " = 2*M*N*K", f"shape of {par['model']} at tensor parallelism {par['tp']}"]
    return Converted(arch, "gemm", _record("gemm", params, tag="vllm-linear", implementation=raw["workload"],
                                           latency_s=latency, raw=raw, notes=notes))


def convert_deepgemm(raw: dict) -> Outcome:
    """DeepGEMM's README tables: fp8 block-scaled GEMMs (normal, grouped contiguous, grouped
    masked with every row valid) and their TFLOP/s, kernel time from the profiler."""
    arch = _added_source(raw, category="gemm", marker="DeepGEMM", field="workload", unit="TFLOP/s", what="DeepGEMM")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    groups = par["groups"]
    params = {**fmt.gemm_params(groups * par["M_per_group"], par["N"], par["K"], par["dtype"]), "groups": groups,
              "impl": "deepgemm"} | ({"layout": "masked"} if par["layout"] == "masked" else {})
    latency, how = _tflops_latency(fmt.nominal_flops("gemm", params), raw["value"])
    notes = [how + " = 2*M*N*K with M all groups' rows", "latency_s is the kernel's device time (latency_kind: device)"]
    tag = "deepgemm" if par["layout"] == "normal" else f"deepgemm-{par['layout']}-g{groups}"
    return Converted(arch, "gemm", _record("gemm", params, tag=tag, implementation=raw["workload"], latency_s=latency,
                                           raw=raw, notes=notes, latency_kind="device"))


PALLAS_GUIDE_FLOOR_SIZE = 4096
"""The JAX Pallas TPU guide's times include Python dispatch and a host sync per call: its own
jnp.matmul at 1024^3 takes 0.119 ms, about 9x that matmul's FLOP time, so its 1024^3 rows time
the host, not the kernel; from 4096^3 the floor is under 12% of a time."""


def convert_pallas_guide_matmul(raw: dict) -> Outcome:
    """The JAX documentation's Pallas TPU matmul guide: its blocked kernel at two block shapes
    and XLA's jnp.matmul, mean wall time per call on a TPU v5e."""
    arch = _added_source(raw, category="gemm", marker="JAX Pallas TPU guide", field="hardware", unit="s",
                         what="JAX Pallas TPU guide")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    if par["M"] < PALLAS_GUIDE_FLOOR_SIZE:
        return LeftOut("JAX Pallas TPU guide at 1024^3: its times are the host's dispatch floor (its jnp.matmul takes "
                       "0.119 ms, about 9x the FLOP time), not the kernel's")
    params = fmt.gemm_params(par["M"], par["N"], par["K"], par["dtype"])
    config = {"block_m": par["block_m"], "block_n": par["block_n"], "block_k": par["block_k"]} if "block_m" in par else None
    tag = "pallas-guide" if config else "xla-guide"
    notes = ["latency_s is the source's time (mean wall time per call)"]
    return Converted(arch, "gemm", _record("gemm", params, tag=tag + (f"-{config['block_m']}x{config['block_k']}x"
                                                                       f"{config['block_n']}" if config else ""),
                                           implementation=raw["workload"], latency_s=raw["value"], raw=raw,
                                           notes=notes, config=config))


def convert_tileops_decode(raw: dict) -> Outcome:
    """TileOPs' dense GQA decode comparison on an H200: FA3, FlashInfer and its own kernel,
    one query token, device time in microseconds."""
    arch = _added_source(raw, category="attention", marker="TileOPs GQA decode", field="hardware", unit="us",
                         what="TileOPs decode")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    params = fmt.attention_params(par["batch"], par["heads"], par["kv_heads"], par["seq_q"], par["seq_kv"],
                                  par["head_dim"], False, par["dtype"])
    tag = {"FlashAttention-3": "fa3", "FlashInfer": "flashinfer", "TileOPs": "tileops"}[raw["workload"].split()[0]]
    params["impl"] = DECODE_IMPLS[tag]
    notes = ["latency_s is the source's device time (latency_kind: device, so the comparison leaves out the "
             "simulated launch overhead)",
             f"the doc's row '{par['row']}', {par.get('column', 'After' if tag == 'tileops' else 'Best external')!r} column"]
    config = None
    if tag == "tileops":
        config, how = tileops_decode_config(par["batch"], par["kv_heads"], par["seq_kv"])
        if "split_kv" in par:  # another configuration the doc timed (its 'Before' column or experiments)
            config = {**config, "split_kv": par["split_kv"], "block_n": par["block_n"]}
            how = f"{par['split_kv']} splits of {par['block_n']}-token tiles, as the notes quote"
            tag = f"tileops-s{par['split_kv']}-n{par['block_n']}"
        notes.append(f"config: {how}")
    notes.append(FLUSH_NOTE.format(TILEOPS_FLUSH["bytes"]) + " (TileOPs' bench_kernel zeroes a buffer of the "
                 "L2's size, benchmarks/benchmark_base.py at 046da58d)")
    return Converted(arch, "attention", _record("attention", params, tag=tag, implementation=raw["workload"],
                                                latency_s=raw["value"] * 1e-6, raw=raw, notes=notes, config=config,
                                                latency_kind="device", conditions=TILEOPS_CONDITIONS,
                                                cache_flush=TILEOPS_FLUSH))


DECODE_IMPLS = {"fa3": "fa3", "flashinfer": "flashinfer", "tileops": "flash_decoding"}
"""TileOPs' decode records -> the attention family's ``impl``: TileOPs' own kernel is a split-KV
flash-decoding kernel (query heads of a KV group as rows, a combine kernel after)."""


TILEOPS_CONDITIONS = {"clock": "1500 MHz"}
"""The doc's 'H200, SM clock 1500 MHz' (locked for every implementation it timed)."""


TILEOPS_SPLITS = (32, 16, 8)
"""TileOPs' batch-one split counts, the first that divides the sequence into whole tiles
(``GQADecodeBs1KernelMixin._CTX_SPLIT_CANDIDATES``, tile-ai/TileOPs
tileops/kernels/attention/gqa_decode_bs1_common.py, read 2026-12-01)."""


def tileops_decode_config(batch: int, kv_heads: int, seq_kv: int) -> tuple[dict, str]:
    """The attention family's config for the kernel TileOPs' doc measured (its 'After'
    column), and how it was read. The doc: batched decode uses '64-token KV tiles' and 'the
    smallest power-of-two split count targeting 256 partial CTAs across batch and KV heads,
    capped at 16'; batch one 'keeps its 64-token tiles through 128K KV tokens and uses
    128-token tiles above', from 1K tokens on (its ``_MIN_CTX``), with a ring of two
    buffers. Its kernels run 64-row (``block_H``/``block_M``) tiles with one four-warp
    consumer group (a fifth, producer, warp on batch one issues the loads)."""
    base = {"block_m": 64, "num_stages": 2, "num_warps": 4}
    if batch == 1:
        block_n = 64 if seq_kv <= 131072 else 128
        split = next((s for s in TILEOPS_SPLITS if seq_kv % (s * block_n) == 0), TILEOPS_SPLITS[-1])
        return ({**base, "block_n": block_n, "split_kv": split},
                f"batch one: {block_n}-token tiles, {split} splits (the first of {TILEOPS_SPLITS} dividing "
                "the sequence into whole tiles), a ring of two")
    split = 1
    while batch * kv_heads * split < 256 and split < 16:
        split *= 2
    return ({**base, "block_n": 64, "split_kv": split},
            f"batched: 64-token tiles, {split} split(s) (the smallest power of two giving 256 CTAs over "
            f"{batch} x {kv_heads} batch x KV heads, at most 16), two stages")


def _causal(text: str) -> bool | None:
    word = text.split()[0].lower() if text.strip() else ""
    return {"true": True, "false": False}.get(word)


ATTENTION_IMPLS = (("FlashAttention-2", "fa2"), ("FlashAttention-3", "fa3"), ("cuDNN", "cudnn"),
                   ("Standard attention", "unfused"), ("Triton", "triton"))
"""The FlashAttention-3 paper's series -> the attention family's ``impl`` (and the record's tag):
'Standard attention' is PyTorch eager attention (bmm, softmax, bmm), 'Triton' the Triton
tutorial's fused kernel."""


def convert_flash_attention_chart(raw: dict) -> Outcome:
    """FlashAttention-3 paper charts: 16k tokens, hidden 2048, TFLOP/s by the FlashAttention count
    (backward: 2.5x the forward's), each series as the ``impl`` that ran it."""
    if raw["category"] != "attention" or raw["hardware"] != "NVIDIA H100 80GB SXM5":
        return None
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    par = raw["parameters"]
    causal = _causal(par["causal"])
    if causal is None:
        return LeftOut("attention whose causal flag the source does not give")
    impl = next((name for series, name in ATTENTION_IMPLS if f"({series})" in raw["workload"]), None)
    if impl is None:
        return LeftOut("attention implementation the converter does not recognise")
    seq, head_dim = par["seqlen"], par["head_dim"]
    heads = par["hidden_dim"] // head_dim
    direction = par.get("pass", "fwd")
    params = {
        "batch": par["total_tokens"] // seq, "heads": heads, "kv_heads": heads, "seq_q": seq, "seq_kv": seq,
        "head_dim": head_dim, "causal": causal, "dtype": {"bf16/fp16": "bf16", "fp8_e4m3": "fp8"}[par["dtype"]],
        "pass": "bwd" if direction == "bwd" else "fwd", "impl": impl,
    }
    latency, how = _tflops_latency(fmt.nominal_flops("attention", params), raw["value"])
    count = "4*batch*heads*seq^2*head_dim, halved when causal" + (", times 2.5 for the backward" if direction == "bwd" else "")
    notes = [how + f" = {count} (FlashAttention's benchmark count)", f"source's causal flag: {par['causal']}"]
    if direction == "bwd":
        notes.append("a whole backward call (pass=bwd: the benchmark times the backward of the forward's output)")
    if par["dtype"] == "bf16/fp16":
        notes.append("source gives the dtype as bf16/fp16; recorded as bf16 (same tensor-core rate)")
    return Converted(arch, "attention", _record("attention", params, tag=impl, implementation=raw["workload"],
                                                latency_s=latency, raw=raw, notes=notes))


def convert_flashmla_decode(raw: dict) -> Outcome:
    """FlashMLA's own decode test on an H100: milliseconds per call (both kernels, launches
    included), the latent head dims 576/512 as the ``flashmla`` implementation runs them."""
    arch = _added_source(raw, category="attention", marker="FlashMLA", field="workload", unit="ms",
                         what="FlashMLA decode")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    params = {**fmt.attention_params(par["batch"], par["heads"], par["kv_heads"], par["seq_q"], par["seq_kv"],
                                     par["head_dim"], par["causal"], par["dtype"]), "impl": "flashmla"}
    notes = ["latency_s is the source's milliseconds per call (both kernels and their launches)",
             "flops and bytes are the format's FlashAttention counts with head_dim 576 (MLA's value is the key's "
             "first 512 dims, read once); the comparison is on latency", FLUSH_NOTE.format(DO_BENCH_FLUSH["bytes"])]
    return Converted(arch, "attention", _record("attention", params, tag="flashmla", implementation=raw["workload"],
                                                latency_s=raw["value"] * 1e-3, raw=raw, notes=notes,
                                                cache_flush=DO_BENCH_FLUSH))


def convert_cudnn_frontend_prefill(raw: dict) -> Outcome:
    """cudnn-frontend's attention_inference results: cuDNN's SDPA prefill, milliseconds per call
    (CUDA events around it: its launch included), causal, GQA."""
    arch = _added_source(raw, category="attention", marker="cudnn-frontend attention_inference", field="workload",
                         unit="ms", what="cudnn-frontend prefill")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    params = {**fmt.attention_params(par["batch"], par["heads"], par["kv_heads"], par["seq_q"], par["seq_kv"],
                                     par["head_dim"], par["causal"], par["dtype"]), "impl": "cudnn"}
    notes = [f"latency_s is the source's milliseconds per call (model {par['model']})"]
    return Converted(arch, "attention", _record("attention", params, tag="cudnn-frontend",
                                                implementation=raw["workload"], latency_s=raw["value"] * 1e-3,
                                                raw=raw, notes=notes))


CUDNN_SDPA_FLUSH = {"bytes": 256 * 2**20, "access": "write"}
"""cudnn-frontend's ``benchmark_single_sdpa.py``: ``l2_flush_buffer.zero_()`` of 256 MiB before each
profiled forward and backward call."""


def cudnn_sdpa_benchmark_flops(par: dict) -> int:
    """The flop count of cudnn-frontend's ``benchmark_single_sdpa.py`` (``flops()``), whose TFLOP/s the
    CSVs print: ``2*batch*q_heads*unmasked*(d_qk + d_vo)`` forward, ``*(3*d_qk + 2*d_vo)`` backward, a
    causal (``top_left``) mask keeping the lower triangle with its diagonal (``torch.tril(...).sum()``)."""
    seq_q, seq_kv = par["seq_q"], par["seq_kv"]
    if par["causal"]:
        unmasked = sum(min(i + 1, seq_kv) for i in range(seq_q)) if seq_q != seq_kv else seq_q * (seq_q + 1) // 2
    else:
        unmasked = seq_q * seq_kv
    dims = 2 * par["head_dim"] if par["pass"] == "fwd" else 5 * par["head_dim"]
    return 2 * par["batch"] * par["heads"] * unmasked * dims


def convert_cudnn_frontend_training(raw: dict) -> Outcome:
    """cudnn-frontend's sdpa_benchmark_training results: cuDNN's SDPA forward or backward, device time
    under the profiler after an L2 flush, printed as milliseconds (3 decimals) and TFLOP/s (integers)."""
    arch = _added_source(raw, category="attention", marker="cudnn-frontend sdpa_benchmark_training", field="workload",
                         unit="TFLOP/s", what="cudnn-frontend training SDPA")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    source_flops = cudnn_sdpa_benchmark_flops(par)
    from_tflops = source_flops / (raw["value"] * 1e12)
    time_s = par["time_ms"] * 1e-3
    if abs(from_tflops - time_s) > 0.5e-6 + from_tflops * 0.5 / raw["value"]:
        return LeftOut("cudnn-frontend row whose time and TFLOP/s disagree beyond their rounding")
    # the printed time has 3 decimals and the TFLOP/s none: take whichever is rounded less
    use_tflops = 0.5 / raw["value"] < 0.5e-6 / time_s
    latency = from_tflops if use_tflops else time_s
    how = (f"latency_s derived from {raw['value']:g} TFLOP/s and the script's own flop count ({source_flops:.6g}; "
           f"the printed time, {par['time_ms']} ms, is rounded more)" if use_tflops else
           f"latency_s is the source's median time, {par['time_ms']} ms (its {raw['value']:g} TFLOP/s is rounded more)")
    params = {**fmt.attention_params(par["batch"], par["heads"], par["kv_heads"], par["seq_q"], par["seq_kv"],
                                     par["head_dim"], par["causal"], par["dtype"], par["pass"]), "impl": "cudnn"}
    notes = [how, f"model {par['model']}", "latency_s is the kernels' device time (latency_kind: device)",
             FLUSH_NOTE.format(CUDNN_SDPA_FLUSH["bytes"]) + " (benchmark_single_sdpa.py zeroes a 256 MiB buffer)"]
    if par["pass"] == "bwd":
        notes.append("a whole backward call (pass=bwd: every kernel of cuDNN's backward graph, summed)")
    return Converted(arch, "attention", _record("attention", params, tag="cudnn-sdpa-training",
                                                implementation=raw["workload"], latency_s=latency, raw=raw,
                                                notes=notes, latency_kind="device", cache_flush=CUDNN_SDPA_FLUSH))


BENCHMARK_TABLE_IMPLS = {"cuDNN": "cudnn"}
"""flash-attention benchmark tables' columns -> the attention family's ``impl``."""


def convert_fa_benchmark_table(raw: dict) -> Outcome:
    """flash-attention's benchmark table (PR #2605 on a B200): TFLOP/s by FlashAttention's count,
    one column per implementation."""
    arch = _added_source(raw, category="attention", marker="flash-attention benchmark table", field="workload",
                         unit="TFLOP/s", what="flash-attention benchmark table")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    impl = BENCHMARK_TABLE_IMPLS[raw["workload"].split()[0]]
    params = {**fmt.attention_params(par["batch"], par["heads"], par["heads"], par["seq"], par["seq"],
                                     par["head_dim"], par["causal"], par["dtype"]), "impl": impl}
    latency, how = _tflops_latency(fmt.nominal_flops("attention", params), raw["value"])
    return Converted(arch, "attention", _record("attention", params, tag=impl, implementation=raw["workload"],
                                                latency_s=latency, raw=raw,
                                                notes=[how + " = 4*batch*heads*seq^2*head_dim, halved when causal"]))


TRITONBENCH_IMPLS = {"triton_tutorial_flash_v2": "triton", "flash_v3": "fa3"}
"""TritonBench's flash_attention providers -> the attention family's ``impl``."""


def convert_tritonbench_attention(raw: dict) -> Outcome:
    """pytorch/benchmark PR #2391's TritonBench table: the Triton tutorial kernel and FA3 at the FA3
    paper's sizes, head dim 128, TFLOP/s by FlashAttention's count."""
    arch = _added_source(raw, category="attention", marker="TritonBench", field="workload", unit="TFLOP/s",
                         what="TritonBench attention")
    if not isinstance(arch, str):
        return arch
    par = raw["parameters"]
    impl = next(name for provider, name in TRITONBENCH_IMPLS.items() if f"({provider})" in raw["workload"])
    params = {**fmt.attention_params(par["batch"], par["heads"], par["heads"], par["seq"], par["seq"],
                                     par["head_dim"], par["causal"], par["dtype"]), "impl": impl}
    latency, how = _tflops_latency(fmt.nominal_flops("attention", params), raw["value"])
    return Converted(arch, "attention", _record("attention", params, tag=f"tritonbench-{impl}",
                                                implementation=raw["workload"], latency_s=latency, raw=raw,
                                                notes=[how + " = 4*batch*heads*seq^2*head_dim"]))


LIGER_FAMILIES = {"layer_norm": "layernorm", "rms_norm": "rmsnorm", "softmax": "softmax",
                  "relu_squared": "elementwise"}
LIGER_TAGS = (("(liger)", "liger"), ("(huggingface/torch)", "torch"), ("(huggingface (unfused", "hf-unfused"))
LIGER_IMPLS = {"liger": "liger", "torch": "torch", "hf-unfused": "torch"}
"""The norm families' ``impl`` for each of the CSV's providers: Liger's kernel, ``torch.nn.LayerNorm``
(PyTorch's CUDA kernel), and Hugging Face's ``LlamaRMSNorm`` (PyTorch eager ops, one kernel each)."""


def convert_liger(raw: dict, paired_notes: Callable[[dict], str]) -> Outcome:
    """Liger-Kernel's benchmark CSV: median latency (ms) of its row-wise kernels (norms, softmax, and
    relu_squared, an elementwise kernel launched one row per program) by rows and cols."""
    if raw["category"] != "memory_bound":
        return None
    if raw["metric"].startswith("effective bandwidth"):
        return LeftOut("bandwidth derived from the median latency of the same run, which is converted")
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    kernel = raw["workload"].split()[0]
    if kernel not in LIGER_FAMILIES or raw["metric"] != "median latency" or raw["unit"] != "ms":
        return LeftOut("memory-bound record the converter does not recognise")
    family = LIGER_FAMILIES[kernel]
    tag = next(t for marker, t in LIGER_TAGS if marker in raw["workload"])
    par = raw["parameters"]
    notes = [f"latency_s is the source's median latency, {raw['value']:g} ms; forward pass only"]
    if family == "elementwise":
        return _liger_elementwise(raw, arch, tag, notes)
    params = {"rows": par["M"], "cols": par["N_or_H"], "dtype": par["dtype"]}
    if family != "softmax":  # the softmax family has one implementation, the Triton kernel Liger's is
        params["impl"] = LIGER_IMPLS[tag]
    if family == "rmsnorm" and par["dtype"] != "fp32":
        # benchmark_rms_norm.py builds LigerRMSNorm and LlamaRMSNorm without a dtype: nn.Parameter(torch.ones(H))
        params["weight_dtype"] = "fp32"
        notes.append("weight_dtype: the benchmark's modules keep their weight in fp32 (built without a dtype, "
                     "benchmark/scripts/benchmark_rms_norm.py)")
    extra = paired_notes(raw)
    if extra:
        notes.append(f"the source's bandwidth record for this run adds: {extra}")
    config = liger_norm_config(par["N_or_H"]) if tag == "liger" else None
    if config:
        notes.append(f"config: Liger's launch (one row per program, {config['num_warps']} warps from calculate_settings)")
    notes.append(FLUSH_NOTE.format(DO_BENCH_FLUSH["bytes"]) + " (Liger's benchmark scripts time with triton.testing.do_bench)")
    return Converted(arch, family, _record(family, params, tag=tag, implementation=raw["workload"], latency_s=raw["value"] / 1e3, raw=raw, notes=notes,
                                           config=config, cache_flush=DO_BENCH_FLUSH))


def _liger_elementwise(raw: dict, arch: str, tag: str, notes: list[str]) -> Outcome:
    """Liger's relu_squared forward: one array in, one out, one program per row of ``cols`` elements
    (a power of two in the CSV's sweep, so the block is the row) with calculate_settings' warps."""
    par = raw["parameters"]
    rows, cols = par["M"], par["N_or_H"]
    if tag != "liger" or cols & (cols - 1):
        return LeftOut("Liger elementwise record the converter does not recognise")
    params = {"elements": rows * cols, "dtype": par["dtype"], "inputs": 1, "outputs": 1}
    config = {"block_elements": cols, "num_warps": liger_norm_config(cols)["num_warps"]}
    notes += [f"elements = {rows} rows x {cols} cols",
              f"config: Liger's launch (one program per row of {cols} elements, {config['num_warps']} warps from "
              "calculate_settings)",
              FLUSH_NOTE.format(DO_BENCH_FLUSH["bytes"]) + " (Liger's benchmark scripts time with triton.testing.do_bench)"]
    return Converted(arch, "elementwise", _record("elementwise", params, tag=tag, implementation=raw["workload"],
                                                  latency_s=raw["value"] / 1e3, raw=raw, notes=notes, config=config,
                                                  cache_flush=DO_BENCH_FLUSH))


LIGER_WARPS = ((32768, 32), (8192, 16), (2048, 8), (0, 4))
"""Liger-Kernel's ``calculate_settings`` (``src/liger_kernel/ops/utils.py``, from Unsloth):
warps by the Triton block, ``next_power_of_2(cols)``, at least the first threshold it reaches."""


def liger_norm_config(cols: int) -> dict:
    """The launch of Liger's layer_norm and rms_norm forward kernels (0.2-0.8) and of its softmax forward
    where the row fits one block (0.8, ``_softmax_single_block_forward_kernel``): a grid of one program per
    row (``_layer_norm_forward_kernel[(n_rows,)]``), the whole row as one block."""
    block = 1 << max(cols - 1, 0).bit_length()
    return {"block_rows": 1, "num_warps": next(w for threshold, w in LIGER_WARPS if block >= threshold)}


GPU_STREAM_ARRAYS: dict[str, tuple[int, int, str]] = {
    "init": (0, 1, "A[i] = 0.23"),
    "read": (1, 0, "t = B[i]; A[i] written only if t == 123.0, which it never is"),
    "scale": (1, 1, "A[i] = 1.2 * B[i]"),
    "triad": (2, 1, "A[i] = 1.2 * B[i] + C[i]"),
}
"""gpu-stream's kernels as (arrays read, arrays written, body), from ``gpu-stream/main.cu``.
Its 3pt and 5pt stencils also read their neighbours (served by L1), which the ``elementwise``
family does not model, so they are left out."""
GPU_STREAM_CONFIG = {"block_elements": 1024, "num_warps": 32}
"""The 100%-occupancy row the records take: 1024 threads per block, one double per thread,
``max_buffer_size / blockSize + 1`` blocks (``gpu-stream/main.cu``)."""


def convert_gpu_stream(raw: dict) -> Outcome:
    """gpu-benches gpu-stream: its init, read, scale and triad kernels are ``elementwise`` kernels on doubles."""
    if raw["category"] != "microbenchmark" or not raw["workload"].startswith("STREAM-like"):
        return None
    match = re.match(r"STREAM-like '(\w+)'", raw["workload"])
    kernel = match.group(1) if match else ""
    if kernel not in GPU_STREAM_ARRAYS:
        return None  # a stencil: a microbenchmark record (convert_stream_stencil)
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    inputs, outputs, body = GPU_STREAM_ARRAYS[kernel]
    params = {"elements": GPU_STREAM_ELEMENTS, "dtype": "fp64", "inputs": inputs, "outputs": outputs}
    streams = max(inputs + outputs, 1)
    gb_per_s = raw["value"]
    notes = [
        f"latency_s derived from {gb_per_s:g} GB/s as {streams}*{GPU_STREAM_ELEMENTS * 8}/bandwidth (the source counts "
        f"{streams} stream(s) of 128Mi+2 doubles, gpu-stream/main.cu)",
        "host wall-clock time of two back-to-back launches halved, median of 9, at 100% occupancy "
        "(1024 threads per block, one double per thread)",
    ]
    implementation = f"gpu-benches gpu-stream '{kernel}' kernel (CUDA, fp64 {body})"
    record = _record("elementwise", params, tag=f"gpu-stream-{kernel}", implementation=implementation,
                     latency_s=streams * GPU_STREAM_ELEMENTS * 8 / (gb_per_s * 1e9), raw=raw, notes=notes)
    record["config"] = dict(GPU_STREAM_CONFIG)
    return Converted(arch, "elementwise", record)


MICRO = "microbenchmarks"
"""The pseudo-family of converted microbenchmark records: ``<arch>/microbenchmarks.json``
(validation/microbenchmark_format.py), not a kernel family."""
KIB = 1024


def _micro(benchmark: str, params: dict, *, tag: str, raw: dict, notes: list[str], **figures) -> dict:
    """A microbenchmark record: the source's notes verbatim, then ours; ``figures`` by unit-named field."""
    hardware_note = HARDWARE_NOTES.get(raw["hardware"])
    joined = " ".join(n if n.endswith(".") else n + "." for n in [raw["notes"].strip(), *notes, hardware_note] if n)
    return {"id": f"{benchmark.replace('_', '-')}-{tag}", "benchmark": benchmark, "params": params,
            **{k: float(f"{v:.12g}") for k, v in figures.items()}, "samples_s": [], "measured": True,
            "source": raw["source"], "notes": joined, "hardware": raw["hardware"]}


def convert_pointer_chase(raw: dict) -> Outcome:
    """gpu-benches gpu-latency: cycles per dependent load over a working set (one warp)."""
    if raw["category"] != "microbenchmark" or not raw["workload"].startswith("pointer-chase"):
        return None
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    par = raw["parameters"]
    clock_hz = par["clock_MHz_assumed"] * 1e6
    params = {"working_set_bytes": par["working_set_kB"] * KIB, "level": par["level_interpretation"],
              "clock_mhz_assumed": par["clock_MHz_assumed"]}
    notes = [f"latency_s derived from {raw['value']:g} cycles at the source's assumed {par['clock_MHz_assumed']} MHz",
             "working_set_bytes = the source's kB x 1024"]
    return Converted(arch, MICRO, _micro("load_latency", params, tag=f"{params['working_set_bytes']}B", raw=raw,
                                         notes=notes, latency_cycles=raw["value"], latency_s=raw["value"] / clock_hz))


def convert_cache_bandwidth(raw: dict) -> Outcome:
    """gpu-benches gpu-cache (one block per SM re-reading its own buffer: L1, else L2) and
    gpu-l2-cache (512 kB per block over a growing total: L2, then HBM): bytes per second."""
    if raw["category"] != "microbenchmark" or not raw["workload"].startswith(("gpu-cache:", "gpu-l2-cache:")):
        return None
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    par = raw["parameters"]
    per_block = raw["workload"].startswith("gpu-cache:")
    size = (par["dataset_kB"] if per_block else par["total_dataset_kB"]) * KIB
    params = {"working_set_bytes": size, "scope": "per block (one block per SM)" if per_block else "whole grid",
              "kernel": "gpu-cache" if per_block else "gpu-l2-cache"}
    notes = ["bytes_per_s = the source's GB/s x 1e9", "working_set_bytes = the source's kB x 1024"]
    return Converted(arch, MICRO, _micro("cache_bandwidth", params, tag=f"{params['kernel']}-{size}B", raw=raw,
                                         notes=notes, bytes_per_s=raw["value"] * 1e9))


def convert_cache_capacity(raw: dict) -> Outcome:
    if raw["category"] != "microbenchmark" or not raw["workload"].startswith("L1 capacity"):
        return None
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    return Converted(arch, MICRO, _micro("cache_capacity", {"level": "L1"}, tag="l1", raw=raw,
                                         notes=["capacity_bytes = the source's kB x 1024"],
                                         capacity_bytes=raw["value"] * KIB))


def convert_stream_stencil(raw: dict) -> Outcome:
    """gpu-stream's 3pt and 5pt stencils: STREAM-like kernels whose neighbour reads hit in L1,
    which the elementwise family does not model, so a bandwidth figure, not a kernel record."""
    if raw["category"] != "microbenchmark" or not raw["workload"].startswith("STREAM-like"):
        return None
    match = re.match(r"STREAM-like '(\w+)'", raw["workload"])
    kernel = match.group(1) if match else ""
    if kernel in GPU_STREAM_ARRAYS:
        return None  # a kernel record (convert_gpu_stream)
    arch = _arch_or_reason(raw)
    if isinstance(arch, LeftOut):
        return arch
    params = {"kernel": kernel, "block_size": raw["parameters"]["blockSize"],
              "occupancy_pct": raw["parameters"]["occupancy_pct"]}
    return Converted(arch, MICRO, _micro("stream_bandwidth", params, tag=f"gpu-stream-{kernel}", raw=raw,
                                         notes=["bytes_per_s = the source's GB/s x 1e9"],
                                         bytes_per_s=raw["value"] * 1e9))


def convert_clock_under_load(raw: dict) -> Outcome:
    """An SM clock read while a microbenchmark kept the chip busy (``added_measurements.yaml``)."""
    arch = _added_source(raw, category="microbenchmark", marker="clock under load", field="metric", unit="MHz",
                         what="clock under load")
    if not isinstance(arch, str):
        return arch
    params = {"load": raw["parameters"]["load"], "statistic": raw["parameters"]["statistic"]}
    return Converted(arch, MICRO, _micro("clock_under_load", params, tag=slugify_tag(params["statistic"]), raw=raw,
                                         notes=["clock_hz = the source's MHz x 1e6"], clock_hz=raw["value"] * 1e6))


def convert_vector_throughput(raw: dict) -> Outcome:
    """CUDA-core flops per second of independent instruction chains on every SM
    (``added_measurements.yaml``: gpu-benches' gpu-roofline at its highest intensity)."""
    arch = _added_source(raw, category="microbenchmark", marker="CUDA-core throughput", field="metric",
                         unit="GFLOP/s", what="CUDA-core throughput")
    if not isinstance(arch, str):
        return arch
    params = dict(raw["parameters"])
    tag = slugify_tag(f"{params['instruction']}-{params['dtype']}")
    return Converted(arch, MICRO, _micro("vector_throughput", params, tag=tag, raw=raw,
                                         notes=["flops_per_s = the source's GF/s x 1e9"],
                                         flops_per_s=raw["value"] * 1e9))


def slugify_tag(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


CATEGORY_REASONS = {
    "microbenchmark": "a microbenchmark the converters do not recognise",
    "collective": "the measurement format has no collective family yet",
    "tpu": "whole-model training throughput, not a kernel",
    "vendor_spec": "vendor specification or clock reading, not a kernel measurement",
}


def _bandwidth_note_lookup(records: list[dict]) -> Callable[[dict], str]:
    """For a Liger latency record, the caveat its paired derived-bandwidth record adds, if any."""
    standard = re.compile(r"^DERIVED by me = .*?ignores weight/bias/stat traffic\.\s*")
    by_run = {
        (r["hardware"], r["workload"], json.dumps(r["parameters"], sort_keys=True)): standard.sub("", r["notes"]).strip()
        for r in records
        if r["category"] == "memory_bound" and r["metric"].startswith("effective bandwidth")
    }
    return lambda raw: by_run.get((raw["hardware"], raw["workload"], json.dumps(raw["parameters"], sort_keys=True)), "")


def convert_all(records: list[dict]) -> tuple[list[Converted], Counter]:
    paired = _bandwidth_note_lookup(records)
    converters: list[Callable[[dict], Outcome]] = [
        convert_mamf, convert_vllm_linear, convert_nsys_kernel_summary, convert_deepgemm, convert_pallas_guide_matmul, convert_tileops_decode,
        convert_flashmla_decode, convert_fa_benchmark_table, convert_cudnn_frontend_prefill, convert_cudnn_frontend_training,
        convert_fixed_shape_gemm, convert_flash_attention_chart, convert_tritonbench_attention,
        lambda raw: convert_liger(raw, paired), convert_gpu_stream,
        convert_pointer_chase, convert_cache_bandwidth, convert_cache_capacity, convert_stream_stencil,
        convert_clock_under_load, convert_vector_throughput,
    ]
    converted, left_out = [], Counter()
    for raw in records:
        outcome = next((o for o in (c(raw) for c in converters) if o is not None), None)
        if outcome is None and not raw["measured"]:
            outcome = LeftOut("vendor peak specification (measured: false), not a measurement")
        if outcome is None:
            outcome = LeftOut(CATEGORY_REASONS.get(raw["category"], "not a kernel measurement"))
        if isinstance(outcome, Converted):
            converted.append(_with_informs(outcome))
        else:
            left_out[(raw["category"], outcome.reason)] += 1
    return converted, left_out


def _with_informs(item: Converted) -> Converted:
    """The record with ``informs`` where a published value of its chip came from it (:data:`DERIVED_VALUES`)."""
    paths = DERIVED_VALUES.get((item.arch, item.record["id"]))
    return Converted(item.arch, item.family, {**item.record, "informs": list(paths)}) if paths else item


def _config_of(arch: str) -> tuple[str, str]:
    """The arch's display name and device kind (``gpu`` or ``tpu``, the folder its config is in)."""
    for kind in ("gpu", "tpu"):
        path = REPO / "arch_configs" / kind / f"{arch}.yaml"
        if path.is_file():
            return yaml.safe_load(path.read_text(encoding="utf-8"))["display_name"], kind
    raise FileNotFoundError(f"no arch_configs/gpu or arch_configs/tpu config named {arch}")


def build_files(converted: list[Converted], input_sha256: str) -> dict[Path, dict]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for item in converted:
        groups[(item.arch, item.family)].append(item.record)
    files = {}
    for (arch, family), records in sorted(groups.items()):
        records.sort(key=lambda r: r["id"])
        display_name, kind = _config_of(arch)
        files[Path(arch) / f"{family}.json"] = {
            "schema_version": micro_fmt.SCHEMA_VERSION if family == MICRO else fmt.SCHEMA_VERSION,
            "kind": micro_fmt.KIND if family == MICRO else fmt.KIND,
            **({} if family == MICRO else {"family": family}),
            "device": {
                "name": display_name,
                "arch": arch,
                "slug": arch,
                "kind": kind,
                "source_names": sorted({r["hardware"] for r in records}),
            },
            "provenance": {
                "date": None,
                "command": "python3 validation/reference/build_reference.py",
                "versions": {},
                "clocks": {},
                "source": "shared/reference/public_measurements.json and validation/reference/added_measurements.yaml: "
                          "public measurements, each record citing its own source",
                "input_sha256": input_sha256,
            },
            "records": records,
        }
    return files


def find_input(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    for candidate in INPUT_CANDIDATES:
        if candidate.is_file():
            return candidate
    sys.exit("build_reference.py: error: public_measurements.json not found; pass --input PATH")


RECORD_FIELDS = ("category", "hardware", "workload", "parameters", "metric", "value", "unit", "source", "notes",
                 "measured")


def _plain_record(record) -> bool:
    """An input record in the schema's shape (what the converters may index without checking)."""
    return (isinstance(record, dict) and all(k in record for k in RECORD_FIELDS)
            and all(isinstance(record[k], str) for k in ("category", "hardware", "workload", "metric", "unit",
                                                             "source", "notes"))
            and isinstance(record["parameters"], dict) and isinstance(record["measured"], bool)
            and isinstance(record["value"], int | float) and not isinstance(record["value"], bool))


def _written_here(path: Path) -> bool:
    """A reference file this script wrote (its provenance says so): the only kind it removes."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "build_reference.py" in str(data.get("provenance", {}).get("command", ""))


def _bad(message: str) -> int:
    print(f"build_reference.py: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, default=None, help="public_measurements.json (default: shared/reference/)")
    parser.add_argument("--added", type=Path, default=ADDED, help="this repository's added records (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: validation/reference/)")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        return _bad(f"--out: {str(args.out)!r} is a file; expected a folder")
    try:
        source = find_input(args.input)
        raw_bytes, added_bytes = source.read_bytes(), args.added.read_bytes()
        raw, added = json.loads(raw_bytes), yaml.safe_load(added_bytes)
    except (OSError, ValueError, yaml.YAMLError) as exc:  # ValueError: JSON; a message of one line
        return _bad(f"cannot read the inputs: {str(exc).splitlines()[0]}")
    if not isinstance(raw, list) or not isinstance(added, dict) or not isinstance(added.get("records"), list):
        return _bad("expected a list of records (--input) and a mapping with a 'records' list (--added)")
    bad = next((i for i, r in enumerate(raw + added["records"]) if not _plain_record(r)), None)
    if bad is not None:
        return _bad(f"record {bad}: expected an object with the record schema's fields (category, hardware, "
                    "workload, parameters, metric, value, unit, source, notes, measured: true or false)")
    try:
        converted, left_out = convert_all(raw + added["records"])
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        return _bad(f"a record the converters cannot read ({type(exc).__name__}: {exc})")
    files = build_files(converted, hashlib.sha256(raw_bytes + added_bytes).hexdigest())
    for relative, data in files.items():  # every file checked before anything is written or removed
        problems = (micro_fmt.validate_file if data["kind"] == micro_fmt.KIND else fmt.validate_measurement_file)(data)
        if problems:
            return _bad(f"{relative}: {problems[0]}")
    for stale in args.out.glob("*/*.json"):  # files this script wrote before, and only those
        if stale.relative_to(args.out) not in files and _written_here(stale):
            stale.unlink()
    for relative, data in files.items():
        fmt.write_json_atomic(args.out / relative, data)
        print(f"{relative}: {len(data['records'])} records")
    print(f"converted {len(converted)} records; left out {sum(left_out.values())}:")
    for (category, reason), count in sorted(left_out.items()):
        print(f"  {count:4d}  {category}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
