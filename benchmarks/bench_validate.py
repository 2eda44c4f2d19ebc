"""How fast predicted-vs-measured comparisons run, in one process and in worker processes
(``accelsim validate --jobs``): the reference records of the A100 and the H100 GEMMs,
each simulated with ``config=auto`` (or the config it names).

    python benchmarks/bench_validate.py [--jobs N]

Prints one table (records, wall time, records per second, speed-up); nothing is written.
The predictions are the same whatever the number of processes; the speed-up is bounded
by the slowest record (an fp32 8192^3 GEMM here) and by the cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from accelsim.workers import default_workers
from accelsim.validate.compare import compare, read_measurements

REFERENCE = Path(__file__).resolve().parent.parent / "validation" / "reference"
SETS = {
    "a100 (gemm, norms, stream)": [REFERENCE / "a100-sxm4-80gb"],
    "h100 gemm": [REFERENCE / "h100-sxm" / "gemm.json"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=default_workers())
    args = parser.parse_args()
    rows = [("set", "records", "jobs", "wall s", "records/s", "speed-up")]
    for name, paths in SETS.items():
        records = read_measurements(paths)
        base = None
        for jobs in sorted({1, max(1, args.jobs)}):
            started = time.perf_counter()
            compare(records, jobs=jobs)
            wall = time.perf_counter() - started
            base = base or wall
            rows.append((name, str(len(records)), str(jobs), f"{wall:.1f}", f"{len(records) / wall:.1f}",
                         f"{base / wall:.2f}x"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
