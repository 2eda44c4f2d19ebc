#!/usr/bin/env python3
"""Before a GPU session: compile every case of ``measure_triton.py``'s GPU sweep for the
GPU's target, on this CPU, and say what each needs and whether it fits.

    TRITON_INTERPRET=1 python validation/precheck_triton.py [--target sm_90] [--arch h200-sxm]

Each case is captured at a smaller problem size with the same config (same tile shapes,
stages, warps, dtype and head_dim, sizes still multiples of 16, so the compiler
specialises the same way) and compiled with ``accelsim capture triton --compile-for``'s
machinery. Prints per case the compiled shared memory, registers per thread and spilled
bytes, and whether the shared memory fits ``--arch``'s per-block limit. A case that does
not compile or does not fit would be skipped on the GPU (and cost its share of the
budget): fix the sweep first. Exit code 1 when any case fails.

Uses accelsim (unlike the measurement scripts, it runs here, not on the GPU machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # capture runs the interpreter; set before triton is imported

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import measure_triton  # noqa: E402

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.capture.triton_compile import parse_target  # noqa: E402
from accelsim.errors import InputError  # noqa: E402

KERNELS = HERE.parent / "kernels" / "triton"
SMALL_GEMM = 512
SMALL_SEQ = 512
SMALL_ROWS = 64
ENTRY = {"attention-bwd": ("attention", "run_bwd"), "decode": ("decode_attention", "run_split"),
         "matmul-bt": ("matmul", "run_bt")}
"""Kernels of the sweep that are not ``<kernel>.py:run``: (file stem, function)."""


def capture_params(case: measure_triton.Case) -> dict[str, str]:
    """The case's config at a small problem size (what the compiler sees is unchanged)."""
    p, c = case.params, case.config
    if case.kernel in ("matmul", "matmul-bt"):
        out = {"M": SMALL_GEMM, "N": SMALL_GEMM, "K": SMALL_GEMM, "dtype": p["dtype"],
               **{k: c[k] for k in ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")}}
    elif case.kernel in ("attention", "attention-bwd"):
        out = {"batch": 1, "heads": 2, "kv_heads": 2, "seq_q": SMALL_SEQ, "head_dim": p["head_dim"],
               "causal": p["causal"], "dtype": p["dtype"],
               **{k: c[k] for k in ("block_m", "block_n", "num_stages", "num_warps")}}
    elif case.kernel == "decode":  # the split kernel (the combine is a few loads per head); whole blocks per split
        out = {"batch": 1, "heads": p["heads"] // p["kv_heads"], "kv_heads": 1, "head_dim": p["head_dim"],
               "seq_kv": c["split_kv"] * c["block_n"], "dtype": p["dtype"],
               **{k: c[k] for k in ("block_m", "block_n", "split_kv", "num_stages", "num_warps")}}
    else:
        out = {"rows": SMALL_ROWS, "cols": p["cols"], "dtype": p["dtype"], "block_rows": c["block_rows"],
               "num_warps": c["num_warps"]}
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="sm_90", help="NVIDIA target (default sm_90, Hopper)")
    parser.add_argument("--arch", default="h200-sxm", help="chip whose per-block shared memory limit applies")
    parser.add_argument("--scale", default="gpu", choices=("gpu", "gpu-quick"), help="which sweep of measure_triton")
    args = parser.parse_args(argv)
    try:
        parse_target(args.target)
        limit = int(load_arch(args.arch).local.max_per_program_bytes)
    except InputError as exc:  # the options' fault, not the sweep's: one line
        print(f"precheck_triton.py: error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    seen: dict[tuple, tuple] = {}
    print(f"{'case':58} {'shared B':>9} {'regs':>5} {'spill':>5}  fits {args.arch} ({limit} B)")
    for case in measure_triton.plan(args.scale):
        params = capture_params(case)
        key = (case.kernel, tuple(sorted(params.items())))
        started = time.perf_counter()
        if key not in seen:
            try:
                stem, function = ENTRY.get(case.kernel, (case.kernel, "run"))
                trace = capture_triton(str(KERNELS / f"{stem}.py"), function, params, compile_for=args.target)
                compiled = trace.metadata["compiled"]
                seen[key] = (compiled["shared_memory_bytes"], compiled["registers_per_thread"],
                             compiled["spilled_bytes_per_thread"], "")
            except InputError as exc:
                seen[key] = (0, 0, 0, exc.message)
        shared, regs, spill, error = seen[key]
        size = case.params.get("seq_kv") if case.kernel == "decode" else None
        name = f"{case.tag} {size or case.params.get('M') or case.params.get('seq_q') or case.params.get('cols')}"
        if error:
            failed += 1
            print(f"{name:58} does not compile: {error}")
            continue
        fits = shared <= limit
        failed += not fits
        print(f"{name:58} {shared:9d} {regs:5d} {spill:5d}  {'yes' if fits else 'NO'}"
              f"  ({time.perf_counter() - started:.1f} s)")
    print(f"{failed} of {len(measure_triton.plan(args.scale))} cases would fail on the GPU")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
