#!/usr/bin/env python3
"""Measure the memory system's own numbers, for chip configs to cite: load latency by pointer
chasing, and read bandwidth against the bytes each SM keeps in flight.

    python3 validation/measure_micro.py --out "$OUT/h200-sxm/micro" --budget-s 20
    TRITON_INTERPRET=1 python3 validation/measure_micro.py --device cpu --quick --out /tmp/micro

``measure_gpu.py`` runs this as its ``micro`` suite, last. It writes one file,
``<out>/microbenchmarks.json`` (``kind: microbenchmarks``): these are not kernel-family
records, so ``accelsim validate`` and ``calibrate`` pass over the file. Two benchmarks:

* ``load_latency``: one program follows a random cycle through a working set of 128-byte
  lines (each line holds the index of the next), so every load waits for the one before;
  seconds per load over working sets from 64 KiB (L1/L2) to 1 GiB (HBM, TLB misses
  included). What ``hbm.latency`` and ``shared_cache.latency`` cite (the H200 config
  inherits the H100 PCIe's figure for want of this one).
* ``read_bandwidth``: ``programs_per_sm x SMs`` programs each stream a contiguous share of
  a 1 GiB fp32 array in loads of ``block_elements`` (Triton ``num_stages=1``: one load in
  flight per program), so ``bytes_in_flight_per_sm`` is set by the launch; bytes per second
  against it are Little's law measured: where bandwidth stops rising is the loaded latency
  (the H200 STREAM kernels reach 57-81% of the datasheet, docs/accuracy.md).

Correct first: the chase's end point is compared with the same walk done on the host (a
short walk), the read kernel's sum with ``torch.sum``. Timing: CUDA events (or
``time.perf_counter`` on the CPU), after a warm-up call, median of the reps. Needs torch and
triton (never accelsim).
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
from measurement_format import write_json_atomic  # noqa: E402
from provenance import command_line, now_utc, read_gpu_state, suite_parser  # noqa: E402

STARTED = time.monotonic()
LINE_BYTES = 128
"""One cache line per chase step (the L2's sector group; a line's first 8 bytes hold the next index)."""
LINE_INT64 = LINE_BYTES // 8
PLANS = {
    "gpu": {"working_sets": [2**16, 2**20, 2**23, 2**25, 2**26, 2**28, 2**30], "steps": 4096, "reps": 3,
            "read_bytes": 2**30, "programs_per_sm": [1, 2, 4, 8, 16], "blocks": [1024, 4096], "read_reps": 10},
    "gpu-quick": {"working_sets": [2**20, 2**28], "steps": 2048, "reps": 3,
                  "read_bytes": 2**28, "programs_per_sm": [1, 4], "blocks": [1024], "read_reps": 5},
    "cpu": {"working_sets": [2**12, 2**14], "steps": 64, "reps": 2,
            "read_bytes": 2**16, "programs_per_sm": [1, 2], "blocks": [256], "read_reps": 2},
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


def timed(fn, reps: int, on_gpu: bool) -> list[float]:
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
    data = {
        "kind": "microbenchmarks", "schema_version": 1, "device": device.info,
        "provenance": {"date": now_utc(), "command": command_line(argv), "versions": lib.library_versions(device),
                       "clocks": {"before": read_gpu_state() if on_gpu else None},
                       "source": "accelsim validation/measure_micro.py",
                       "timing": {"method": "cuda-events" if on_gpu else "perf_counter", "statistic": "median",
                                  "scale": scale}},
        "records": [], "skipped": [],
    }
    path = args.out / "microbenchmarks.json"
    cases = [("latency", size, None) for size in plan["working_sets"]]
    cases += [("read", pps, block) for block in plan["blocks"] for pps in plan["programs_per_sm"]]
    print(f"micro: {device.info['name']} ({scale}), {len(cases)} cases -> {path}", flush=True)
    for name, a, b in cases:
        label = f"{name} {a}" + (f" x {b}" if b else "")
        if time.monotonic() + per_case > deadline:
            data["skipped"].append({"id": label, "reason": "time budget"})
            continue
        try:
            record = (measure_latency(a, plan, device, on_gpu) if name == "latency"
                      else measure_read(a, b, plan, device, on_gpu, sms))
        except Exception as exc:  # noqa: BLE001 - one failed case is recorded and skipped
            data["skipped"].append({"id": label, "reason": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"  {label}: skipped ({type(exc).__name__})", flush=True)
            continue
        data["records"].append(record)
        shown = (f"{record['latency_s'] * 1e9:.0f} ns per load" if name == "latency"
                 else f"{record['bytes_per_s'] / 1e9:.0f} GB/s")
        print(f"  {label}: {shown}", flush=True)
        write_json_atomic(path, data)  # after every case: a run stopped early keeps what it measured
    data["provenance"]["clocks"]["after"] = read_gpu_state() if on_gpu else None
    write_json_atomic(path, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
