#!/usr/bin/env python3
"""Measure the hardware's own numbers, for chip configs to cite: load latency by pointer
chasing, read bandwidth against the bytes each SM keeps in flight, MMA throughput and latency,
launch and CTA costs, and the SM clock under matrix load.

    python3 validation/measure_micro.py --out "$OUT/h200-sxm/micro" --budget-s 20
    TRITON_INTERPRET=1 python3 validation/measure_micro.py --device cpu --quick --out /tmp/micro

``measure_gpu.py`` runs this as its ``micro`` suite, last. It writes one file,
``<out>/microbenchmarks.json`` in the microbenchmark format (``microbenchmark_format.py``,
``kind: microbenchmarks``: the schema of the published microbenchmarks in
``validation/reference/<arch>/microbenchmarks.json``), which ``accelsim validate`` and
``calibrate`` pass over. The benchmarks:

* ``load_latency``: one program follows a random cycle through a working set of 128-byte
  lines (each line holds the index of the next), so every load waits for the one before;
  seconds per load over working sets from 64 KiB (L1/L2) to 1 GiB (HBM, TLB misses
  included). What ``hbm.latency`` and ``shared_cache.latency`` cite.
* ``read_bandwidth``: ``programs_per_sm x SMs`` programs each stream a contiguous share of
  a 1 GiB fp32 array in loads of ``block_elements`` (Triton ``num_stages=1``: one load in
  flight per program), so ``bytes_in_flight_per_sm`` is set by the launch; bytes per second
  against it are Little's law measured: where bandwidth stops rising is the loaded latency.
* ``cache_bandwidth``: the same read over a working set that fits the L2 (read ``repeats``
  times) or does not: the L2's bandwidth beside HBM's.
* ``mma_throughput``: every SM runs programs whose loop is ``acc = dot(a, b, acc)`` on
  operands held in registers (a GEMM's main loop without its loads), so flops per second are
  the tensor cores' rate at that tile and dtype (``shape`` is the tile, ``m128n128k64``);
  ``clock_under_load`` is the SM clock NVML read meanwhile (where it can be read).
* ``mma_latency``: one program of one warp chains ``dot`` on a 16x16x16 tile, each on the
  accumulator of the last: seconds per dependent MMA. And one warpgroup's [64, n, k] fp16 MMA
  group (``wait_tiles``), chained with one group in flight and with each group waited for
  before the CUDA cores read its result: on Hopper the difference is a wgmma group's completion
  latency beyond its issue, which no publication gives (docs/kernels-attention.md, "The wgmma
  latency the literature gives"); the tiles include TileOPs' decode's, m64n64k128 and m64n128k64.
* ``launch_overhead``: back-to-back launches of an empty one-program kernel between two
  events, per launch; ``cta_cost``: what each further empty program adds on an SM (the
  difference of two grid sizes, per program per SM).
* ``kernel_interval`` (GPU only): the empty kernel's device interval as CUPTI reports it, and
  the period of its dependent launches in a CUDA graph: what a device timing holds of a kernel
  beyond its programs (``kernel_device_overhead``), and the gap between kernels it leaves out.
* ``flushed_read``: the read kernel over a working set of 8-64 MiB, timed alone right after a
  flush of a 256 MiB buffer by writing it (``zero_()``, as ``triton.testing.do_bench``), by
  reading it, or by writing it and then idling (``torch.cuda._sleep``): if the L2 is
  write-back, the write flush leaves its lines dirty and the read pays their write-backs
  (``accelsim``'s ``shared_cache.dirty_at_start``, docs/kernels-norm.md); if the L2 cleans
  itself while HBM idles, the third matches the read flush.

Not measured (Triton exposes neither): TMA and ``cp.async`` latency and shared-memory
bandwidth; the published figures are the reference for those.

Correct first: the chase's end point is compared with the same walk done on the host (a
short walk), the read kernels' sums with ``torch.sum``, the MMA loop's result with the
host's product times the iterations. Timing: CUDA events (or ``time.perf_counter`` on the
CPU), after a warm-up call, median of the reps. Needs torch and triton (never accelsim).
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import measure_gpu as lib  # noqa: E402  (device description and versions)
import microbenchmark_format as micro_fmt  # noqa: E402
from measurement_format import write_json_atomic  # noqa: E402
from provenance import ClockSampler, command_line, now_utc, nvml_sm_clock, read_gpu_state, suite_parser  # noqa: E402

STARTED = time.monotonic()
LINE_BYTES = 128
"""One cache line per chase step (the L2's sector group; a line's first 8 bytes hold the next index)."""
LINE_INT64 = LINE_BYTES // 8
PLANS = {
    "gpu": {"working_sets": [2**16, 2**20, 2**23, 2**25, 2**26, 2**28, 2**30], "steps": 4096, "reps": 3,
            "read_bytes": 2**30, "programs_per_sm": [1, 2, 4, 8, 16], "blocks": [1024, 4096], "read_reps": 10,
            "cache_sets": [(2**23, 64), (2**30, 1)], "mma": [("fp16", 128, 128, 64), ("bf16", 128, 128, 64),
                                                              ("fp8", 128, 128, 128)],
            "mma_iters": 4096, "mma_programs_per_sm": 2, "chain_iters": 4096, "launches": 200, "cta_grids": (1, 64),
            "wait_tiles": [(64, 16), (64, 64), (64, 128), (64, 256), (128, 16), (128, 64), (128, 128)],
            "flushed_sets": [2**23, 2**24, 2**25, 2**26], "flush_bytes": 2**28, "idle_cycles": 200_000},
    "gpu-quick": {"working_sets": [2**20, 2**28], "steps": 2048, "reps": 3,
                  "read_bytes": 2**28, "programs_per_sm": [1, 4], "blocks": [1024], "read_reps": 5,
                  "cache_sets": [(2**23, 16)], "mma": [("bf16", 128, 128, 64)], "mma_iters": 1024,
                  "mma_programs_per_sm": 2, "chain_iters": 1024, "launches": 50, "cta_grids": (1, 16),
                  "wait_tiles": [(64, 128), (128, 64)],
                  "flushed_sets": [2**24], "flush_bytes": 2**28, "idle_cycles": 200_000},
    "cpu": {"working_sets": [2**12, 2**14], "steps": 64, "reps": 2,
            "read_bytes": 2**16, "programs_per_sm": [1, 2], "blocks": [256], "read_reps": 2,
            "cache_sets": [(2**14, 2)], "mma": [("fp16", 16, 16, 16)], "mma_iters": 2, "mma_programs_per_sm": 1,
            "chain_iters": 2, "launches": 2, "cta_grids": (1, 2), "wait_tiles": [(64, 16)],
            "flushed_sets": [2**14], "flush_bytes": 2**16, "idle_cycles": 0},
}
PLANS["cpu-quick"] = PLANS["cpu"]
PER_CASE_S = {"gpu": 1.5, "cpu": 3.0}
"""Estimated seconds per case (compile, check, time) for ``--budget-s``."""
CPU_CORES_STANDIN = 2
"""On the CPU (Triton's interpreter) the 'SM' count used to size the grid."""


@functools.cache
def _kernels():
    """The two Triton kernels, made once (each new ``triton.jit`` function compiles anew)."""
    import triton
    import triton.language as tl

    @triton.jit
    def chase(next_ptr, out_ptr, steps):
        idx = tl.load(next_ptr)  # int64: the loop carries the loaded type
        for _ in range(steps - 1):
            idx = tl.load(next_ptr + idx)
        tl.store(out_ptr, idx)

    @triton.jit
    def read(x_ptr, out_ptr, chunk, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        base = pid.to(tl.int64) * chunk
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, chunk, BLOCK):
            acc += tl.load(x_ptr + base + off + tl.arange(0, BLOCK))
        tl.store(out_ptr + pid, tl.sum(acc, axis=0))

    return chase, read


@functools.cache
def _compute_kernels():
    """The MMA loop and the empty kernel."""
    import triton
    import triton.language as tl

    @triton.jit
    def mma_loop(a_ptr, b_ptr, out_ptr, iters, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 WAITED: tl.constexpr = False):
        # operands loaded once, then only the tensor cores work: acc += a @ b, iters times.
        # WAITED: the CUDA cores read each result (acc + 0.5), so every MMA group is waited for
        # (on Hopper, Triton 3.9: wgmma ... commit_group, wait_group 0, then the adds; without it
        # the loop keeps one group in flight, wait_group 1)
        rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for _ in range(iters):
            acc = tl.dot(a, b, acc)
            if WAITED:
                acc = acc + 0.5
        base = tl.program_id(0).to(tl.int64) * BM * BN
        tl.store(out_ptr + base + rm[:, None] * BN + rn[None, :], acc)

    @triton.jit
    def empty(x_ptr):
        pass

    return mma_loop, empty


TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp8": "float8_e4m3fn"}


def chase_array(working_set: int, seed: int) -> torch.Tensor:
    """int64 elements on the host, one line of ``LINE_BYTES`` per step: a random cycle
    through every line (each line's first element is the index of the next line's)."""
    lines = working_set // LINE_BYTES
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(lines, generator=gen)
    nxt = torch.empty(lines, dtype=torch.int64)
    nxt[order] = torch.roll(order, -1)
    array = torch.zeros(lines * LINE_INT64, dtype=torch.int64)
    array[torch.arange(lines) * LINE_INT64] = nxt * LINE_INT64
    return array


def host_walk(array: torch.Tensor, steps: int) -> int:
    """Where the chase kernel ends after ``steps`` loads, walked on the host copy."""
    idx = int(array[0])
    for _ in range(steps - 1):
        idx = int(array[idx])
    return idx


def timed(fn, reps: int, on_gpu: bool, warm: bool = True) -> list[float]:
    if warm:
        fn()  # warm-up (and, the first time, compile)
    samples = []
    for _ in range(reps):
        if on_gpu:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            began = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - began)
    return samples


def measure_latency(working_set: int, plan: dict, device, on_gpu: bool) -> dict:
    chase, _ = _kernels()
    host = chase_array(working_set, seed=working_set)
    array = host.to(device.torch_device)
    out = torch.zeros(1, dtype=torch.int64, device=device.torch_device)
    check_steps = min(plan["steps"], 64)
    chase[(1,)](array, out, check_steps, num_warps=1)
    expected = host_walk(host, check_steps)
    if int(out.item()) != expected:
        raise RuntimeError(f"chase ended at {int(out.item())}, the host walk at {expected}")
    steps = plan["steps"]
    samples = [s / steps for s in timed(lambda: chase[(1,)](array, out, steps, num_warps=1), plan["reps"], on_gpu)]
    return {"id": f"load-latency-{working_set}B", "benchmark": "load_latency",
            "params": {"working_set_bytes": working_set, "line_bytes": LINE_BYTES, "steps": steps},
            "latency_s": statistics.median(samples), "samples_s": samples,
            "notes": "seconds per dependent load (one program, one chain)"}


def measure_read(programs_per_sm: int, block: int, plan: dict, device, on_gpu: bool, sms: int) -> dict:
    _, read = _kernels()
    programs = programs_per_sm * sms
    elements = plan["read_bytes"] // 4
    chunk = (elements // programs) // block * block
    if chunk == 0:
        raise ValueError(f"{elements} elements do not fill {programs} programs of {block}")
    x = torch.rand(programs * chunk, dtype=torch.float32, device=device.torch_device)
    out = torch.zeros(programs, dtype=torch.float32, device=device.torch_device)
    read[(programs,)](x, out, chunk, BLOCK=block, num_warps=4, num_stages=1)
    total, expected = float(out.double().sum()), float(x.double().sum())
    if not math.isclose(total, expected, rel_tol=1e-3):
        raise RuntimeError(f"read kernel summed {total}, torch.sum {expected}")
    samples = timed(lambda: read[(programs,)](x, out, chunk, BLOCK=block, num_warps=4, num_stages=1),
                    plan["read_reps"], on_gpu)
    nbytes = programs * chunk * 4
    latency = statistics.median(samples)
    return {"id": f"read-bandwidth-{programs_per_sm}x{block}", "benchmark": "read_bandwidth",
            "params": {"programs_per_sm": programs_per_sm, "block_elements": block, "dtype": "fp32", "num_warps": 4,
                       "num_stages": 1, "bytes": nbytes, "bytes_in_flight_per_sm": programs_per_sm * block * 4},
            "latency_s": latency, "samples_s": samples, "bytes_per_s": nbytes / latency,
            "notes": "bytes in flight counts one load of block_elements per program (num_stages=1)"}


def measure_cache_read(working_set: int, repeats: int, plan: dict, device, on_gpu: bool, sms: int) -> dict:
    """Bytes per second reading a working set ``repeats`` times (each program its own share,
    four loads of 1024 elements in flight per program): an L2-sized set read again and again
    is the L2's bandwidth, a set far larger than the L2 read once is HBM's."""
    _, read = _kernels()
    block = min(1024, working_set // 4 // (4 * sms)) or 1
    programs = 4 * sms
    chunk = (working_set // 4 // programs) // block * block
    if chunk == 0:
        raise ValueError(f"a {working_set}-byte working set does not fill {programs} programs of {block}")
    x = torch.rand(programs * chunk, dtype=torch.float32, device=device.torch_device)
    out = torch.zeros(programs, dtype=torch.float32, device=device.torch_device)

    def run():
        for _ in range(repeats):
            read[(programs,)](x, out, chunk, BLOCK=block, num_warps=4, num_stages=1)

    run()
    if not math.isclose(float(out.double().sum()), float(x.double().sum()), rel_tol=1e-3):
        raise RuntimeError("cache read kernel's sum differs from torch.sum")
    samples = timed(run, plan["read_reps"], on_gpu)
    nbytes = programs * chunk * 4 * repeats
    latency = statistics.median(samples)
    return {"id": f"cache-bandwidth-{working_set}B-x{repeats}", "benchmark": "cache_bandwidth",
            "params": {"working_set_bytes": programs * chunk * 4, "repeats": repeats, "programs": programs,
                       "block_elements": block, "dtype": "fp32"},
            "latency_s": latency, "samples_s": samples, "bytes_per_s": nbytes / latency,
            "notes": "each repeat a launch reading the whole working set once; bytes_per_s counts every repeat"}


FLUSHES = ("write", "read", "write-idle")


def measure_flushed_reads(working_set: int, plan: dict, device, on_gpu: bool, sms: int) -> list[dict]:
    """Seconds to read a working set once (the read kernel, four programs per SM), timed alone
    after each kind of flush of a ``flush_bytes`` buffer (:data:`FLUSHES`)."""
    _, read = _kernels()
    programs = 4 * sms
    block = min(1024, working_set // 4 // programs) or 1
    chunk = (working_set // 4 // programs) // block * block
    if chunk == 0:
        raise ValueError(f"a {working_set}-byte working set does not fill {programs} programs of {block}")
    x = torch.rand(programs * chunk, dtype=torch.float32, device=device.torch_device)
    out = torch.zeros(programs, dtype=torch.float32, device=device.torch_device)
    buffer = torch.empty(plan["flush_bytes"] // 4, dtype=torch.float32, device=device.torch_device)
    buffer_chunk = buffer.numel() // programs // block * block
    sink = torch.zeros(programs, dtype=torch.float32, device=device.torch_device)

    def run():
        read[(programs,)](x, out, chunk, BLOCK=block, num_warps=4, num_stages=1)

    def idle():
        if on_gpu and plan["idle_cycles"]:
            torch.cuda._sleep(plan["idle_cycles"])

    flushes = {
        "write": buffer.zero_,
        "read": lambda: read[(programs,)](buffer, sink, buffer_chunk, BLOCK=block, num_warps=4, num_stages=1),
        "write-idle": lambda: (buffer.zero_(), idle()),
    }
    run()
    if not math.isclose(float(out.double().sum()), float(x.double().sum()), rel_tol=1e-3):
        raise RuntimeError("flushed read kernel's sum differs from torch.sum")
    nbytes = programs * chunk * 4
    records = []
    for flush in FLUSHES:
        # idle() first keeps the host ahead of the device, so that no gap opens after the flush
        samples = timed_after(flushes[flush], run, plan["read_reps"], on_gpu, lead=idle)
        latency = statistics.median(samples)
        records.append({
            "id": f"flushed-read-{nbytes}B-after-{flush}", "benchmark": "flushed_read",
            "params": {"working_set_bytes": nbytes, "flush": flush, "flush_bytes": buffer.numel() * 4,
                       "programs": programs, "block_elements": block, "dtype": "fp32",
                       **({"idle_cycles": plan["idle_cycles"]} if flush == "write-idle" else {})},
            "latency_s": latency, "samples_s": samples, "bytes_per_s": nbytes / latency,
            "notes": "the read alone is timed (events after the flush); bytes_per_s counts the working set once"})
    return records


def timed_after(flush, fn, reps: int, on_gpu: bool, lead=None) -> list[float]:
    """:func:`timed`, with ``lead`` and then ``flush`` run (untimed) before each rep."""
    samples = []
    for _ in range(reps):
        if lead is not None:
            lead()
        flush()
        samples += timed(fn, 1, on_gpu, warm=False)
    return samples


def measure_mma(dtype: str, tile: tuple[int, int, int], plan: dict, device, on_gpu: bool, sms: int,
                clocks: ClockSampler) -> list[dict]:
    """Tensor-core throughput of the MMA loop on every SM, and the clock read meanwhile."""
    mma_loop, _ = _compute_kernels()
    bm, bn, bk = tile
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    a = (torch.rand(bm, bk, device=device.torch_device) - 0.5).to(torch_dtype)
    b = (torch.rand(bk, bn, device=device.torch_device) - 0.5).to(torch_dtype)
    programs = plan["mma_programs_per_sm"] * sms
    out = torch.empty(programs * bm * bn, dtype=torch.float32, device=device.torch_device)
    check_iters = 2
    mma_loop[(programs,)](a, b, out, check_iters, BM=bm, BN=bn, BK=bk, num_warps=4)
    expected = (a.double() @ b.double()) * check_iters
    if not torch.allclose(out[:bm * bn].view(bm, bn).double().cpu(), expected.cpu(), rtol=2e-2, atol=2e-2):
        raise RuntimeError("MMA loop's result differs from the host's product")
    iters = plan["mma_iters"]
    with clocks.during() as readings:
        samples = timed(lambda: mma_loop[(programs,)](a, b, out, iters, BM=bm, BN=bn, BK=bk, num_warps=4),
                        plan["reps"], on_gpu)
    latency = statistics.median(samples)
    flops = 2.0 * bm * bn * bk * iters * programs
    shape = f"m{bm}n{bn}k{bk}"
    records = [{"id": f"mma-throughput-{dtype}-{shape}", "benchmark": "mma_throughput",
                "params": {"dtype": dtype, "shape": shape, "accumulator": "fp32", "programs": programs,
                           "iterations": iters, "num_warps": 4},
                "latency_s": latency, "samples_s": samples, "flops_per_s": flops / latency,
                "notes": "operands in registers, acc = dot(a, b, acc) in a loop: the tensor cores' rate at this tile"}]
    if readings:
        records.append({"id": f"clock-under-load-mma-{dtype}-{shape}", "benchmark": "clock_under_load",
                        "params": {"load": f"mma_throughput {dtype} {shape}", "statistic": "median",
                                   "readings": len(readings)},
                        "clock_hz": statistics.median(readings) * 1e6, "samples_s": [],
                        "notes": f"NVML SM clock every 5 ms while the MMA loop ran: {min(readings):.0f} to "
                                 f"{max(readings):.0f} MHz"})
    return records


def measure_mma_latency(plan: dict, device, on_gpu: bool) -> dict:
    """Seconds per dependent 16x16x16 fp16 MMA: one program of one warp, each dot on the last's accumulator."""
    mma_loop, _ = _compute_kernels()
    a = (torch.rand(16, 16, device=device.torch_device) - 0.5).to(torch.float16)
    b = (torch.rand(16, 16, device=device.torch_device) - 0.5).to(torch.float16)
    out = torch.empty(256, dtype=torch.float32, device=device.torch_device)
    iters = plan["chain_iters"]
    samples = [s / iters for s in timed(lambda: mma_loop[(1,)](a, b, out, iters, BM=16, BN=16, BK=16, num_warps=1),
                                        plan["reps"], on_gpu)]
    return {"id": "mma-latency-fp16-m16n16k16", "benchmark": "mma_latency",
            "params": {"dtype": "fp16", "shape": "m16n16k16", "accumulator": "fp32", "iterations": iters,
                       "num_warps": 1},
            "latency_s": statistics.median(samples), "samples_s": samples,
            "notes": "seconds per dot of a dependent chain (one warp); includes the loop's own instructions"}


def measure_mma_wait(tile: tuple[int, int], plan: dict, device, on_gpu: bool) -> list[dict]:
    """Seconds per iteration of one warpgroup's MMA group [64, n, k] (fp16, fp32 accumulator, on
    one SM), with one group kept in flight and with each group waited for before the CUDA cores
    add to its result: on Hopper the first is the wgmma chain's issue interval, the second adds
    the completion latency beyond it (and the adds), what a consumer that waits for every MMA
    pays (TileOPs' batch-one decode, ``T.wait_wgmma(0)``). k swept at a fixed n: the waited line's
    intercept over the in-flight one's is the latency."""
    mma_loop, _ = _compute_kernels()
    bn, bk = tile
    bm = 64
    a = (torch.rand(bm, bk, device=device.torch_device) - 0.5).to(torch.float16)
    b = (torch.rand(bk, bn, device=device.torch_device) - 0.5).to(torch.float16)
    out = torch.empty(bm * bn, dtype=torch.float32, device=device.torch_device)
    product = a.double() @ b.double()
    iters = plan["chain_iters"]
    records = []
    for waited, wait in ((False, "one group in flight"), (True, "each group waited for")):
        def run(n, waited=waited):
            mma_loop[(1,)](a, b, out, n, BM=bm, BN=bn, BK=bk, WAITED=waited, num_warps=4)
        run(2)
        expected = product * 2 + (1.0 if waited else 0.0)
        if not torch.allclose(out.view(bm, bn).double().cpu(), expected.cpu(), rtol=2e-2, atol=2e-2):
            raise RuntimeError(f"MMA loop ({wait})'s result differs from the host's product")
        samples = [t / iters for t in timed(lambda: run(iters), plan["reps"], on_gpu)]
        shape = f"m{bm}n{bn}k{bk}"
        records.append({
            "id": f"mma-latency-fp16-{shape}-{'waited' if waited else 'in-flight'}", "benchmark": "mma_latency",
            "params": {"dtype": "fp16", "shape": shape, "accumulator": "fp32", "iterations": iters, "num_warps": 4,
                       "programs": 1, "wait": wait},
            "latency_s": statistics.median(samples), "samples_s": samples,
            "notes": "seconds per iteration of acc = dot(a, b, acc)" + (" + 0.5: the CUDA cores read each result "
                     "(Triton 3.9 on sm_90: k/16 wgmma, commit_group, wait_group 0, n/2 adds a thread)" if waited else
                     " (Triton 3.9 on sm_90: k/16 wgmma, commit_group, wait_group 1)")})
    return records


def measure_launches(plan: dict, device, on_gpu: bool, sms: int) -> list[dict]:
    """An empty kernel launched back to back: seconds per launch of one program, and what each
    further program adds per SM (the difference of two grids, ``cta_grids`` programs per SM)."""
    _, empty = _compute_kernels()
    x = torch.zeros(1, device=device.torch_device)
    launches = plan["launches"]

    def per_launch(programs: int) -> list[float]:
        def run():
            for _ in range(launches):
                empty[(programs,)](x)
        return [s / launches for s in timed(run, plan["reps"], on_gpu)]

    one = per_launch(1)
    small, large = (n * sms for n in plan["cta_grids"])
    at_small, at_large = statistics.median(per_launch(small)), statistics.median(per_launch(large))
    per_program_on_sm = max(at_large - at_small, 0.0) * sms / (large - small)
    records = [{"id": "launch-overhead-1", "benchmark": "launch_overhead", "params": {"programs": 1, "launches": launches},
                "latency_s": statistics.median(one), "samples_s": one,
                "notes": "an empty one-program Triton kernel launched back to back between two events, per launch"}]
    if per_program_on_sm > 0:
        records.append({"id": f"cta-cost-{plan['cta_grids'][0]}-{plan['cta_grids'][1]}", "benchmark": "cta_cost",
                        "params": {"programs_per_sm": plan["cta_grids"][1], "from_programs_per_sm": plan["cta_grids"][0],
                                   "launches": launches},
                        "latency_s": per_program_on_sm, "samples_s": [],
                        "notes": f"(per-launch time at {large} programs - at {small}) x SMs / {large - small}: what "
                                 "one more empty program costs an SM (launch and retirement)"})
    return records


def measure_kernel_interval(plan: dict, device) -> list[dict]:
    """An empty one-program kernel timed two ways (GPU only): its device interval as CUPTI reports
    it (the PyTorch profiler's kernel events, as ``measure_gpu.py``'s ``kernel_device_s``), and
    the period of dependent launches replayed from a CUDA graph. The interval is what a device
    timing holds of a kernel beyond its programs (``kernel_device_overhead``); the period less
    the interval is the gap between two kernels, which such a timing leaves out."""
    from torch.profiler import ProfilerActivity, profile

    _, empty = _compute_kernels()
    x = torch.zeros(1, device=device.torch_device)
    launches = plan["launches"]
    empty[(1,)](x)  # compile outside the profile and the capture
    device.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            empty[(1,)](x)
        device.sync()
    intervals = [(e.time_range.end - e.time_range.start) * 1e-6 for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA]
    if not intervals:
        raise RuntimeError("the profiler reported no kernel")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            empty[(1,)](x)
    periods = [s / launches for s in timed(graph.replay, plan["reps"], True)]
    params = {"programs": 1, "launches": launches}
    return [{"id": "kernel-interval-profiler", "benchmark": "kernel_interval", "params": {**params, "timing": "profiler"},
             "latency_s": statistics.median(intervals), "samples_s": intervals[:64],
             "notes": "an empty one-program Triton kernel: its device interval (CUPTI, PyTorch profiler), median"},
            {"id": "kernel-interval-graph", "benchmark": "kernel_interval", "params": {**params, "timing": "graph"},
             "latency_s": statistics.median(periods), "samples_s": periods,
             "notes": "the same kernel launched back to back from a CUDA graph, per launch: interval and gap"}]


def parse_args(argv: list[str]) -> argparse.Namespace:
    return suite_parser(__doc__.split("\n\n")[0], "output folder for microbenchmarks.json").parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kind = lib.choose_device({"gpu": "cuda"}.get(args.device, args.device), False)
    on_gpu = kind == "cuda"
    scale = ("gpu" if on_gpu else "cpu") + ("-quick" if args.quick else "")
    plan = PLANS[scale]
    device = lib.describe_device(kind)
    sms = device.info.get("multiprocessors") or CPU_CORES_STANDIN
    deadline = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
    per_case = PER_CASE_S["gpu" if on_gpu else "cpu"]
    source = f"validation/measure_micro.py on {device.info['name']}, {now_utc()}"
    data = {
        "kind": micro_fmt.KIND, "schema_version": micro_fmt.SCHEMA_VERSION, "device": device.info,
        "provenance": {"date": now_utc(), "command": command_line(argv), "versions": lib.library_versions(device),
                       "clocks": {"before": read_gpu_state() if on_gpu else None},
                       "source": "accelsim validation/measure_micro.py",
                       "timing": {"method": "cuda-events" if on_gpu else "perf_counter", "statistic": "median",
                                  "scale": scale}},
        "records": [], "skipped": [],
    }
    path = args.out / "microbenchmarks.json"
    clocks = ClockSampler(nvml_sm_clock(lib.pci_bus_id(device)) if on_gpu else None)
    cases = [(f"latency {size}", lambda size=size: [measure_latency(size, plan, device, on_gpu)])
             for size in plan["working_sets"]]
    cases += [(f"read {pps} x {block}", lambda pps=pps, block=block: [measure_read(pps, block, plan, device, on_gpu, sms)])
              for block in plan["blocks"] for pps in plan["programs_per_sm"]]
    cases += [(f"cache {size} x {repeats}",
               lambda size=size, repeats=repeats: [measure_cache_read(size, repeats, plan, device, on_gpu, sms)])
              for size, repeats in plan["cache_sets"]]
    cases += [(f"mma {dtype} {bm}x{bn}x{bk}", lambda dtype=dtype, tile=(bm, bn, bk):
               measure_mma(dtype, tile, plan, device, on_gpu, sms, clocks)) for dtype, bm, bn, bk in plan["mma"]]
    cases += [(f"flushed reads {size}", lambda size=size: measure_flushed_reads(size, plan, device, on_gpu, sms))
              for size in plan["flushed_sets"]]
    cases += [("mma latency", lambda: [measure_mma_latency(plan, device, on_gpu)]),
              ("launches", lambda: measure_launches(plan, device, on_gpu, sms))]
    if on_gpu:  # neither CUPTI nor CUDA graphs on the interpreter
        cases.append(("kernel interval", lambda: measure_kernel_interval(plan, device)))
    cases += [(f"mma wait 64x{bn}x{bk}", lambda tile=(bn, bk): measure_mma_wait(tile, plan, device, on_gpu))
              for bn, bk in plan["wait_tiles"]]  # last: a tight budget keeps the older cases
    print(f"micro: {device.info['name']} ({scale}), {len(cases)} cases -> {path}", flush=True)
    for label, measure in cases:
        if time.monotonic() + per_case > deadline:
            data["skipped"].append({"id": label, "reason": "time budget"})
            continue
        try:
            records = measure()
            problems = [p for r in records for p in micro_fmt.validate_record(
                {**r, "measured": True, "source": data["provenance"]["source"]})]
            if problems:
                raise ValueError(f"not a valid microbenchmark record: {problems[0]}")
        except Exception as exc:  # noqa: BLE001 - one failed case is recorded and skipped
            data["skipped"].append({"id": label, "reason": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"  {label}: skipped ({type(exc).__name__})", flush=True)
            continue
        for record in records:
            data["records"].append({**record, "measured": True, "source": source})
            print(f"  {label}: {shown(record)}", flush=True)
        write_json_atomic(path, data)  # after every case: a run stopped early keeps what it measured
    data["provenance"]["clocks"]["after"] = read_gpu_state() if on_gpu else None
    write_json_atomic(path, data)
    return 0


def shown(record: dict) -> str:
    """A record's figure as the log prints it."""
    if "bytes_per_s" in record:
        return f"{record['bytes_per_s'] / 1e9:.0f} GB/s"
    if "flops_per_s" in record:
        return f"{record['flops_per_s'] / 1e12:.1f} TFLOP/s"
    if "clock_hz" in record:
        return f"{record['clock_hz'] / 1e6:.0f} MHz"
    return f"{record['latency_s'] * 1e9:.0f} ns"


if __name__ == "__main__":
    sys.exit(main())
