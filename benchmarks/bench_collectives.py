"""How fast collectives simulate: a 30-size all-reduce sweep on 8 GPUs (floor: < 1 s),
and how building topologies, planning and simulating grow with the number of ranks
(8 to 1024) on a GPU cluster and on TPU slices, and what each all-reduce algorithm
costs on 1024 chips when asked for by name (one run each; ``--quick`` skips it).

    python benchmarks/bench_collectives.py [--quick]

Prints tables; nothing is written. Times are the median of a few runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology, make_request, plan_for, run_plans, simulate_collective
from accelsim.network.collectives import ALGORITHMS

REPEATS = 3
SWEEP_FLOOR_S = 1.0


def median_wall_s(fn) -> float:
    walls = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def sweep() -> float:
    topo = build_topology(load_arch("dgx-h100-calibrated"))
    sizes = [8.0 * 2**k for k in range(30)]

    def run():
        for size in sizes:
            simulate_collective(topo, "all-reduce", size)

    wall = median_wall_s(run)
    verdict = "ok" if wall < SWEEP_FLOOR_S else "OVER FLOOR"
    print(f"30-size all-reduce sweep (8 B .. 4 GiB, auto) on dgx-h100-calibrated: {wall * 1e3:.1f} ms "
          f"(floor {SWEEP_FLOOR_S:.0f} s: {verdict})")
    return wall


def scaling(system: str, overrides: tuple[str, ...], kind: str, groups: list[int]) -> None:
    arch = load_arch(system, overrides)
    build_s = median_wall_s(lambda: build_topology(arch))
    topo = build_topology(arch)
    print(f"\n{system} {' '.join(overrides)}: {topo.ranks} ranks, {len(topo.links)} links, "
          f"build_topology {build_s * 1e3:.1f} ms; {kind} of 1 GiB over the first N ranks")
    print(f"{'N':>6} {'algorithm':<22} {'plan (ms)':>10} {'transfers':>10} {'simulate (ms)':>14} {'latency':>12}")
    for n in groups:
        request = make_request(topo, kind, 2.0**30, n)
        plan_s = median_wall_s(lambda: plan_for(topo, request))
        plan = plan_for(topo, request)
        transfers = sum(len(p.transfers) for lane in plan.lanes for p in lane)
        finish = []
        run_s = median_wall_s(lambda: finish.append(run_plans(topo, [plan])[0]))
        name = f"{plan.algorithm}/{plan.protocol}" if plan.protocol else plan.algorithm
        print(f"{n:>6} {name:<22} {plan_s * 1e3:>10.1f} {transfers:>10} {run_s * 1e3:>14.1f} {finish[0] * 1e-6:>9.1f} us")


def every_algorithm(system: str, kind: str, size_bytes: float) -> None:
    """Each algorithm that applies to ``kind`` over all ranks, planned and simulated once
    (cold route and plan caches): direct one-shot and two-shot route every pair of ranks,
    so their plans grow as ranks^2."""
    arch = load_arch(system)
    print(f"\n{system}: {kind} of {size_bytes / 2**20:.0f} MiB over every rank, each algorithm by name (one cold run)")
    print(f"{'algorithm':<22} {'plan (s)':>9} {'transfers':>10} {'simulate (s)':>13} {'latency':>12}")
    for name in sorted(ALGORITHMS):
        topo = build_topology(arch)
        request = make_request(topo, kind, size_bytes)
        started = time.perf_counter()
        try:
            plan = plan_for(topo, request, name)
        except InputError:
            continue  # does not apply here
        plan_s = time.perf_counter() - started
        transfers = sum(len(p.transfers) for lane in plan.lanes for p in lane)
        started = time.perf_counter()
        finish = run_plans(topo, [plan])[0]
        run_s = time.perf_counter() - started
        print(f"{name:<22} {plan_s:>9.2f} {transfers:>10} {run_s:>13.2f} {finish * 1e-6:>9.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the every-algorithm table (about a minute)")
    args = parser.parse_args()
    sweep()
    scaling("h100-ib-cluster", ("nodes=128",), "all-reduce", [8, 64, 256, 1024])
    scaling("h100-ib-cluster", ("nodes=128",), "all-to-all", [8, 64, 256, 1024])
    scaling("tpu-v5p-8x8x8-x2", (), "all-reduce", [8, 64, 512, 1024])
    scaling("tpu-v5p-8x8x8-x2", (), "all-gather", [8, 64, 512, 1024])
    if not args.quick:
        every_algorithm("tpu-v5e-16x16-x4", "all-reduce", 64 * 2**20)


if __name__ == "__main__":
    main()
