"""How fast system traces replay: a synthetic FSDP + tensor-parallel + data-parallel
training step on TPU v5p systems of growing size (floor: the 1024-chip step with
>= 10^5 ops in total in under 60 s), folded (interchangeable devices replayed once)
and, where it fits in the time, unfolded (every device on its own).

    python benchmarks/bench_system_replay.py [--quick]

Prints one table (wall time, SimPy events, device classes, ops and collective
instances, growth with chips and with layers); nothing is written. Unfolded replays
stop at 512 chips: there every replica group's flows are on the link pool at once and
the pool's reallocations (one per instant, over the links in use) dominate; 1024 chips
unfolded take 8-20 s (``python benchmarks/bench_system_replay.py --unfolded-1024``). The trace is
synthetic: per layer, an async FSDP weight all-gather (groups of 64 chips), two
matmuls priced by roofline from flops and bytes, two tensor-parallel all-reduces
(groups of 8 along one torus axis), the same backward with an async gradient
reduce-scatter, and at the end one data-parallel all-reduce across slices (pairs).
A second, per-rank trace (fold ``per-rank``: one program per device, as Chakra imports
are, so nothing folds) is data parallel with per-layer gradient all-reduces over all
ranks overlapping the backward pass. A last table replays compute ops on one device
spread over as many streams as ops (all sharing the device at once) and on one stream:
the cost per op should not grow with the ops (issue 29: 10^4 ops on 10^4 streams took
29 s, 10^5 never ended).
"""

from __future__ import annotations

import argparse
import time

from accelsim.arch.model import load_arch
from accelsim.system.replay import ReplayOptions, replay
from accelsim.system.trace import SystemTrace

FLOOR_S = 60.0
TP = 8
FSDP = 64
MATMUL_FLOPS = 4e11
MATMUL_BYTES = 2e9
WEIGHTS_BYTES = 215e6
ACTIVATION_BYTES = 64 * 2**20


def groups(n: int, size: int, stride: int) -> list[list[int]]:
    """Groups of ``size`` ranks ``stride`` apart, tiling ``0 .. n-1``."""
    block = size * stride
    return [[base + offset + k * stride for k in range(size)]
            for base in range(0, n, block) for offset in range(stride)]


def training_step(chips: int, layers: int, slices: int) -> SystemTrace:
    per_slice = chips // slices
    tp, fsdp = groups(chips, TP, 1), groups(chips, min(FSDP, per_slice // TP), TP)
    dp = groups(chips, slices, per_slice) if slices > 1 else None
    ops: list[dict] = []
    last = None

    def add(op: dict) -> str:
        ops.append(op)
        return op["name"]

    for phase in ("fwd", "bwd"):
        for layer in range(layers) if phase == "fwd" else reversed(range(layers)):
            tag = f"{phase}{layer}"
            gather = add({"name": f"{tag}.ag", "kind": "all-gather", "bytes": WEIGHTS_BYTES, "groups": fsdp,
                          "async": True})
            for k in range(2):
                deps = [gather] + ([last] if last else [])
                mm = add({"name": f"{tag}.mm{k}", "kind": "compute", "flops": MATMUL_FLOPS * (1 + (phase == "bwd")),
                          "bytes": MATMUL_BYTES, "deps": deps})
                last = add({"name": f"{tag}.tp{k}", "kind": "all-reduce", "bytes": ACTIVATION_BYTES, "groups": tp,
                            "deps": [mm]})
            add({"name": f"{tag}.ag.done", "kind": "done", "start": gather})
            if phase == "bwd":
                add({"name": f"{tag}.rs", "kind": "reduce-scatter", "bytes": WEIGHTS_BYTES, "groups": fsdp,
                     "deps": [last], "async": True, "stream": "grads"})
    reduce_scatters = [op["name"] for op in ops if op["name"].endswith(".rs")]
    if dp:
        add({"name": "dp.ar", "kind": "all-reduce", "bytes": WEIGHTS_BYTES / len(fsdp[0]) * layers, "groups": dp,
             "deps": reduce_scatters})
    add({"name": "optimizer", "kind": "compute", "flops": 0.0, "bytes": 3 * WEIGHTS_BYTES * layers / len(fsdp[0]),
         "deps": reduce_scatters + (["dp.ar"] if dp else [])})
    return SystemTrace.model_validate({
        "schema_version": 1, "name": f"synthetic step {chips} chips {layers} layers", "num_devices": chips,
        "programs": [{"name": "spmd", "devices": [f"0-{chips - 1}"], "ops": ops}],
    })


def per_rank_step(chips: int, layers: int) -> SystemTrace:
    """Data parallel, one program per rank (as a Chakra import is): per layer a forward
    and a backward matmul, and the layer's gradients all-reduced over every rank on a
    comm stream while the backward pass goes on."""
    everyone = [list(range(chips))]
    programs = []
    for rank in range(chips):
        ops: list[dict] = []
        for layer in range(layers):
            ops.append({"name": f"fwd{layer}", "kind": "compute", "flops": MATMUL_FLOPS, "bytes": MATMUL_BYTES,
                        "stream": "compute"})
        for layer in reversed(range(layers)):
            ops.append({"name": f"bwd{layer}", "kind": "compute", "flops": 2 * MATMUL_FLOPS, "bytes": MATMUL_BYTES,
                        "stream": "compute"})
            ops.append({"name": f"grads{layer}", "kind": "all-reduce", "bytes": WEIGHTS_BYTES / FSDP,
                        "groups": everyone, "deps": [f"bwd{layer}"], "stream": "comm", "async": True})
        ops.append({"name": "optimizer", "kind": "compute", "duration_s": 1e-4, "stream": "compute",
                    "deps": [f"grads{layer}" for layer in range(layers)]})
        programs.append({"name": f"rank{rank}", "devices": [rank], "ops": ops})
    return SystemTrace.model_validate({
        "schema_version": 1, "name": f"synthetic per-rank DP step {chips} chips {layers} layers",
        "num_devices": chips, "programs": programs,
    })


def many_streams(ops: int, streams: int) -> SystemTrace:
    """``ops`` compute ops of 1 to 7 us on one device, round-robin on ``streams`` streams."""
    return SystemTrace.model_validate({
        "schema_version": 1, "name": f"{ops} ops on {streams} streams", "num_devices": 1,
        "programs": [{"name": "one", "devices": [0], "ops": [
            {"name": f"k{i}", "kind": "compute", "duration_s": 1e-6 * (1 + i % 7), "stream": f"s{i % streams}"}
            for i in range(ops)]}],
    })


def streams_growth(sizes: list[tuple[int, int]]) -> None:
    arch = load_arch("tpu-v5p-4x4x8")
    print(f"{'ops':>10}  {'streams':>10}  {'events':>10}  {'wall (s)':>10}  {'us per op':>10}")
    for ops, streams in sizes:
        trace = many_streams(ops, streams)
        started = time.perf_counter()
        result = replay(trace, arch)
        wall = time.perf_counter() - started
        print(f"{ops:>10}  {streams:>10}  {result.events:>10}  {wall:>10.3f}  {wall / ops * 1e6:>10.1f}")


def run(system: str, layers: int, fold: bool, per_rank: bool = False) -> tuple:
    arch = load_arch(system)
    chips = arch.num_chips
    slices = getattr(arch, "slices", 1)
    trace = per_rank_step(chips, layers) if per_rank else training_step(chips, layers, slices)
    started = time.perf_counter()
    result = replay(trace, arch, options=ReplayOptions(fold=fold))
    wall = time.perf_counter() - started
    shape = "per-rank" if per_rank else ("yes" if fold else "no")
    return (system, chips, layers, shape, trace.num_ops, result.comm_instances, len(result.classes),
            result.events, result.step_time_s * 1e3, wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the floor case")
    parser.add_argument("--unfolded-1024", action="store_true", help="also the 1024-chip 8-layer step unfolded")
    args = parser.parse_args()
    quick = args.quick
    cases = [("tpu-v5p-8x8x8-x2", 8, True), ("tpu-v5p-8x8x8-x2", 33, False, True)]
    if not quick:
        cases = [("tpu-v5p-4x4x8", 8, True), ("tpu-v5p-8x8x8", 8, True), ("tpu-v5p-8x8x8-x2", 8, True),
                 ("tpu-v5p-8x8x8-x2", 24, True), ("tpu-v5p-8x8x8-x2", 48, True),
                 ("tpu-v5p-4x4x8", 2, False), ("tpu-v5p-4x4x8", 8, False), ("tpu-v5p-8x8x8", 1, False),
                 ("tpu-v5p-8x8x8", 8, False),
                 ("tpu-v5p-4x4x8", 33, False, True), ("tpu-v5p-8x8x8", 33, False, True),
                 ("tpu-v5p-8x8x8-x2", 33, False, True)]
    if args.unfolded_1024:
        cases.append(("tpu-v5p-8x8x8-x2", 8, False))
    header = ("system", "chips", "layers", "fold", "ops", "coll.", "classes", "events", "step (ms)", "wall (s)")
    print("  ".join(f"{h:>10}" if i else f"{h:<17}" for i, h in enumerate(header)))
    floor_wall = None
    for case in cases:
        row = run(*case)
        print(f"{row[0]:<17}  " + "  ".join(f"{v:>10.3f}" if isinstance(v, float) else f"{v:>10}" for v in row[1:]))
        if row[1] == 1024 and row[4] >= 100_000:
            floor_wall = row[-1] if floor_wall is None else max(floor_wall, row[-1])
    if floor_wall is not None:
        verdict = "ok" if floor_wall < FLOOR_S else "OVER FLOOR"
        print(f"floor: 1024 chips, >= 1e5 ops in under {FLOOR_S:.0f} s: slowest {floor_wall:.1f} s ({verdict})")
    print()
    streams_growth([(10_000, 10_000)] if quick else
                   [(1_000, 1_000), (10_000, 10_000), (100_000, 100_000), (100_000, 1)])


if __name__ == "__main__":
    main()
