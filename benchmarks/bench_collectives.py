"""How fast collectives simulate: a 30-size all-reduce sweep on 8 GPUs (floor: < 1 s),
and full-slice all-reduces on tori of growing size.

    python benchmarks/bench_collectives.py

Prints one table; nothing is written. Times are the median of a few runs.
"""

from __future__ import annotations

import statistics
import time

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective

REPEATS = 3
SWEEP_FLOOR_S = 1.0


def sweep_wall_s(system: str, sizes: list[float]) -> float:
    topo = build_topology(load_arch(system))
    walls = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        for size in sizes:
            simulate_collective(topo, "all-reduce", size)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def main() -> None:
    sizes_30 = [8.0 * 2**k for k in range(30)]
    rows = [("dgx-h100", "30-size all-reduce sweep (8 B .. 4 GiB), auto", sweep_wall_s("dgx-h100", sizes_30))]
    for system in ("tpu-v5e-4x4", "tpu-v5e-16x16", "tpu-v5p-8x8x8"):
        rows.append((system, "one 1 GiB all-reduce over the slice", sweep_wall_s(system, [2.0**30])))
    print(f"{'system':<16} {'case':<48} {'wall (ms)':>10}")
    for system, case, wall in rows:
        print(f"{system:<16} {case:<48} {wall * 1e3:>10.1f}")
    sweep = rows[0][2]
    verdict = "ok" if sweep < SWEEP_FLOOR_S else "OVER FLOOR"
    print(f"sweep floor {SWEEP_FLOOR_S:.1f} s: {sweep:.3f} s ({verdict})")


if __name__ == "__main__":
    main()
