"""How fast collectives simulate: a 30-size all-reduce sweep on 8 GPUs (floor: < 1 s),
and how building topologies, planning and simulating grow with the number of ranks
(8 to 1024) on a GPU cluster and on TPU slices.

    python benchmarks/bench_collectives.py

Prints tables; nothing is written. Times are the median of a few runs.
"""

from __future__ import annotations

import statistics
import time

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, make_request, plan_for, run_plans, simulate_collective

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
        topo._plans.clear()  # plan every size afresh, as a first sweep would
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
        plan_s = median_wall_s(lambda: (topo._plans.clear(), plan_for(topo, request)))
        plan = plan_for(topo, request)
        transfers = sum(len(p.transfers) for lane in plan.lanes for p in lane)
        finish = []
        run_s = median_wall_s(lambda: finish.append(run_plans(topo, [plan])[0]))
        name = f"{plan.algorithm}/{plan.protocol}" if plan.protocol else plan.algorithm
        print(f"{n:>6} {name:<22} {plan_s * 1e3:>10.1f} {transfers:>10} {run_s * 1e3:>14.1f} {finish[0] * 1e-6:>9.1f} us")


def main() -> None:
    sweep()
    scaling("h100-ib-cluster", ("nodes=128",), "all-reduce", [8, 64, 256, 1024])
    scaling("h100-ib-cluster", ("nodes=128",), "all-to-all", [8, 64, 256, 1024])
    scaling("tpu-v5p-8x8x8-x2", (), "all-reduce", [8, 64, 512, 1024])
    scaling("tpu-v5p-8x8x8-x2", (), "all-gather", [8, 64, 512, 1024])


if __name__ == "__main__":
    main()
