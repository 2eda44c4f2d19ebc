"""Issue 35's table in one run: where users wait (simulation, ``config=auto``, Triton
capture, a 1000-point sweep, a per-rank 1024-chip step, the test suite), each row's
time beside its floor and goal, and the machine's load average before and after it.

    python benchmarks/bench_table.py [--rows capture,sweep,...] [--suite]
    python benchmarks/bench_table.py --rows step    # a 16,384-GPU step, built and replayed

Prints one table; nothing is written. Rows run one after the other in this process
(the sweep's 2 workers in their own, before a capture row loads torch: afterwards the
pool would start its workers from a fork server, whose CPU time this process cannot
count); the test suite (``--suite``) runs ``python -m
pytest`` (its ``addopts``: quiet, a worker per core) in a subprocess and is left out unless asked for. On a shared machine,
compare a row only with the same row of the same run, or of a run at a similar load:
the load columns say how busy the cores were (2 cores: a load above 2 means waiting).
Capture rows do not count importing torch and triton (seconds, once per process).
Simulation rows are the median of 3 runs (``bench_engine.py``; their CPU-s covers building the
trace and all 3 runs); the others are one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported by a capture row

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # the other benchmarks' measuring functions

from accelsim.blas import one_blas_thread  # noqa: E402

one_blas_thread()  # as the accelsim command does, before anything loads numpy

KERNELS = ROOT / "kernels" / "triton"
CAPTURES = {
    "fp8 GEMM 8192^3": ("matmul", {"M": "8192", "N": "8192", "K": "8192", "dtype": "fp8"}),
    "causal attention b4 h16 s4096": ("attention", {"batch": "4", "heads": "16", "seq_q": "4096", "causal": "true"}),
    "bf16 GEMM 4096^3": ("matmul", {"M": "4096", "N": "4096", "K": "4096"}),
}


@dataclass(frozen=True)
class Row:
    """One line of the table: what is timed, its floor and goal (seconds), and how."""

    group: str
    label: str
    floor_s: float
    goal_s: float
    measure: Callable[[], tuple[float, str]]
    """Returns (seconds, a note on what was counted)."""


def simulate(arch: str, family: str, params: dict) -> Callable[[], tuple[float, str]]:
    def measure() -> tuple[float, str]:
        import bench_engine

        _, wall_s, events, programs = bench_engine.measure(arch, family, params)
        return wall_s, f"{programs} programs, {events} events"

    return measure


def search(arch: str, family: str, params: dict) -> Callable[[], tuple[float, str]]:
    def measure() -> tuple[float, str]:
        import bench_search

        row = bench_search.row("", arch, family, params)
        configs, simulated, replayed, wall = row[2], row[3], row[4], row[-1]
        return float(wall), f"{configs} configs, {simulated} simulated, {replayed} replayed"

    return measure


def capture(label: str) -> Callable[[], tuple[float, str]]:
    def measure() -> tuple[float, str]:
        import torch  # noqa: F401  (imported before timing, as triton is: the kernel files import both)

        from accelsim.capture.triton import capture_triton

        kernel, params = CAPTURES[label]
        started = time.perf_counter()
        trace = capture_triton(str(KERNELS / f"{kernel}.py"), "run", params)
        wall = time.perf_counter() - started
        sampling = trace.metadata["sampling"]
        replicated = sampling.get("replicated", 0)
        return wall, (f"{sampling['programs']} programs: {sampling['programs'] - replicated} ran, "
                      f"{sampling['traced_in_full']} in full, {replicated} replicated")

    return measure


def sweep() -> tuple[float, str]:
    import bench_sweep

    with tempfile.TemporaryDirectory() as tmp:
        points, wall, cpu, _ = bench_sweep.timed_sweep(Path(tmp), "h100-sxm", 10, 2, outputs=False)
    return wall, f"{points} points, 2 workers, {cpu:.1f} CPU-s"


def per_rank_step() -> tuple[float, str]:
    import bench_system_replay

    row = bench_system_replay.run("tpu-v5p-8x8x8-x2", 33, False, per_rank=True)
    return row[-1], f"{row[4]} ops, {row[7]} events"


def model_step() -> tuple[float, str]:
    """A Llama 3 405B training step on 16,384 GPUs (its Llama 3 record in
    ``validation/model_steps``), built and replayed: issue 34's "under a minute"."""
    sys.path.insert(0, str(ROOT / "validation" / "model_steps"))
    import json

    import model_steps

    records = json.loads((ROOT / "validation" / "model_steps" / "records.json").read_text())["records"]
    started = time.perf_counter()
    step, _ = model_steps.plan(next(r for r in records if r["id"] == "llama3-405b-16k-gpus"))
    trace = model_steps.step_trace(step)
    built = time.perf_counter() - started
    result, replayed = model_steps.run_step(step, trace)
    wall = time.perf_counter() - started
    return wall, (f"{trace.num_ops:,} device-ops, {len(replayed.classes)} classes, {replayed.events:,} events, "
                  f"built in {built:.1f} s; step {result.step_time_s:.3f} s")


def suite() -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    counts = [line for line in done.stdout.splitlines() if " passed" in line or " failed" in line]
    summary = counts[-1].strip("= ") if counts else f"exit {done.returncode}"
    return wall, summary


OPT_IN = ("step", "suite")
"""Groups left out unless named: the test suite (minutes) and the 16,384-GPU step."""

ROWS = [
    Row("sim", "8192^3 bf16 GEMM on H100, fixed config", 0.030, 0.010,
        simulate("h100-sxm", "gemm", {"M": 8192, "N": 8192, "K": 8192})),
    Row("sim", "causal attention fwd, 16k tokens, d128", 0.050, 0.020,
        simulate("h100-sxm", "attention", {"heads": 16, "seq_q": 16384, "head_dim": 128, "causal": True})),
    Row("search", "config=auto GEMM 4096^3 on A100", 0.3, 0.1,
        search("a100-sxm4-40gb", "gemm", {"M": 4096, "N": 4096, "K": 4096})),
    Row("sweep", "1000-point sweep (GEMM + attention per point)", 10.0, 5.0, sweep),
    Row("replay", "per-rank 1024-chip step (102k ops)", 5.0, 2.0, per_rank_step),
    # no row of issue 35: issue 34's "under a minute" for the whole step as the floor
    Row("step", "Llama 3 405B step, 16,384 GPUs: build + replay", 60.0, 60.0, model_step),
    *(Row("capture", f"Triton capture: {label}", floor, goal, capture(label))
      for label, floor, goal in (("fp8 GEMM 8192^3", 5.0, 1.0), ("causal attention b4 h16 s4096", 5.0, 1.0),
                                 ("bf16 GEMM 4096^3", 3.0, 0.5))),
    Row("suite", "test suite, python -m pytest", 240.0, 120.0, suite),
]


def main() -> None:
    groups = sorted({row.group for row in ROWS})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(g for g in groups if g not in OPT_IN),
                        help=f"comma-separated groups of rows to run, of {', '.join(groups)}")
    parser.add_argument("--suite", action="store_true", help="add the test suite's row (minutes)")
    args = parser.parse_args()
    chosen = set(args.rows.split(",")) | ({"suite"} if args.suite else set())
    unknown = chosen - set(groups)
    if unknown:
        parser.error(f"--rows: unknown {', '.join(sorted(unknown))}; expected some of {', '.join(groups)}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores; load average (1 min) before -> after each row; CPU-s: this process's CPU time "
          f"over the row (not its subprocesses)")
    print(f"{'what':48s} {'seconds':>9s} {'CPU-s':>8s} {'floor':>7s} {'goal':>7s}  {'load':>11s}  counted")
    for row in ROWS:
        if row.group not in chosen:
            continue
        load_before, cpu_before = os.getloadavg()[0], time.process_time()
        wall, note = row.measure()
        cpu = time.process_time() - cpu_before
        verdict = "" if wall <= row.floor_s else " (over floor)"
        print(f"{row.label:48s} {wall:9.3f} {cpu:8.2f} {row.floor_s:7.3g} {row.goal_s:7.3g}  "
              f"{load_before:4.1f} -> {os.getloadavg()[0]:4.1f}  {note}{verdict}", flush=True)


if __name__ == "__main__":
    main()
