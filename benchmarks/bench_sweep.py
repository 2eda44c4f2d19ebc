"""How fast ``accelsim sweep`` is: a 1000-point sweep of a GEMM and an attention kernel
over three H100 fields (HBM bandwidth, clock, L2 capacity; 10 values each), with 2
worker processes, and how the rate scales from 1 to 2 workers.

    python benchmarks/bench_sweep.py [--points-for-scaling 200] [--arch h100-sxm]

Prints the rate in points per second (one point = both workloads), the share of the
time spent writing results.csv, plots and summary.md, and the scaling table. Output
goes to a temporary folder that is removed afterwards. The machine's other load
shows up in the wall times; the CPU seconds (this process and its workers) do not, and
``CPU-s / 2`` is what the sweep would take on two idle cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.study.plan import plan_sweep
from accelsim.validate.compare import boost_on
from accelsim.study.sweep import execute, write_outputs

SPEC = """\
name: bench
base: {arch}
parameters:
  hbm.bandwidth: {{range: {{start: "1 TB/s", stop: "10 TB/s", num: 10}}}}
  clock: {{range: {{start: "1.2 GHz", stop: "2.1 GHz", num: 10}}}}
  shared_cache.capacity: {{log_range: {{start: "12.5 MB", stop: "200 MB", num: {caches}}}}}
{fixed_clock}workloads:
  - kernel: gemm
    params: {{M: 4096, N: 4096, K: 4096, dtype: bf16}}
  - kernel: attention
    params: {{batch: 1, heads: 16, seq_q: 2048, head_dim: 128, causal: true}}
metrics: [latency_s]
"""


FIXED_CLOCK = "  power.dvfs.boost.enabled: {values: [false]}\n"
"""On a chip with the boost on (h100-sxm) `clock` is refused: the sweep prices each point at one
fixed clock, as the figures in docs/sweeps.md were taken."""


def boosted(arch: str) -> bool:
    return boost_on(load_arch(arch))


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed_sweep(folder: Path, arch: str, caches: int, workers: int, outputs: bool) -> tuple[int, float, float, float]:
    """(points, sweep seconds, CPU seconds of the sweep, output seconds)."""
    spec = folder / f"spec-{caches}-{workers}.yaml"
    spec.write_text(SPEC.format(arch=arch, caches=caches, fixed_clock=FIXED_CLOCK if boosted(arch) else ""))
    started, cpu = time.perf_counter(), cpu_seconds()
    plan = plan_sweep(spec)
    rows, _, _ = execute(plan, folder / f"out-{caches}-{workers}", workers=workers, progress=False)
    swept = time.perf_counter() - started
    cpu = cpu_seconds() - cpu
    written = 0.0
    if outputs:
        started = time.perf_counter()
        write_outputs(plan, rows, folder / f"out-{caches}-{workers}")
        written = time.perf_counter() - started
    failed = sum(r.status != "ok" for r in rows.values())
    assert not failed, f"{failed} runs failed"
    return len(plan.points), swept, cpu, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="h100-sxm")
    parser.add_argument("--points-for-scaling", type=int, default=200, help="points per scaling run (a multiple of 100, at least 200)")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{args.arch}, 2 workloads per point (gemm 4096^3 bf16, attention fwd 16 heads seq 2048 causal); "
          f"{cores} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        points, swept, cpu, written = timed_sweep(folder, args.arch, 10, 2, outputs=True)
        verdict = "under" if swept < 60 else "OVER"
        print(f"1000-point sweep, 2 workers: {swept:.1f} s wall ({points / swept:.1f} points/s, {verdict} the 60 s "
              f"floor); {cpu:.1f} CPU-s ({cpu / points * 1e3:.0f} ms per point: {cpu / 2:.1f} s on 2 idle cores); "
              f"writing results.csv, plots and summary.md: {written:.1f} s more")
        caches = max(2, args.points_for_scaling // 100)
        print(f"\nscaling ({caches * 100} points each)\nWORKERS  WALL      POINTS/S  SPEEDUP  CPU-S")
        base = None
        for workers in (1, 2):
            points, swept, cpu, _ = timed_sweep(folder, args.arch, caches, workers, outputs=False)
            rate = points / swept
            base = base or rate
            print(f"{workers:<7}  {swept:6.1f} s  {rate:8.1f}  {rate / base:6.2f}x  {cpu:6.1f}")


if __name__ == "__main__":
    main()
