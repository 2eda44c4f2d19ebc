"""How fast the chip engine is: wall time and events for the issue's reference cases,
and how wall time grows with the number of programs.

    python benchmarks/bench_engine.py

Prints one table; nothing is written. Times are the median of a few runs of
``simulate_kernel`` (trace building is timed separately).
"""

from __future__ import annotations

import statistics
import time

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.search import split_params

REPEATS = 3


def measure(arch: str, family_name: str, params: dict) -> tuple[float, float, int, int]:
    chip = load_arch(arch)
    family = get_family(family_name)
    values, given, _ = split_params(family, {k: str(v) for k, v in params.items()})
    config = family.resolve_config(values, given, chip)
    started = time.perf_counter()
    trace = family.build(values, config, chip)
    build_s = time.perf_counter() - started
    walls, sim = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        sim = simulate_kernel(trace, chip)
        walls.append(time.perf_counter() - started)
    return build_s, statistics.median(walls), sim.events, trace.num_programs


def row(label: str, arch: str, family: str, params: dict, floor_s: float | None = None) -> tuple:
    build_s, wall_s, events, programs = measure(arch, family, params)
    verdict = "" if floor_s is None else ("ok" if wall_s < floor_s else f"OVER {floor_s}s")
    return label, arch, programs, events, f"{build_s * 1e3:.1f}", f"{wall_s * 1e3:.1f}", verdict


def main() -> None:
    rows = [
        row("gemm 8192^3 bf16", "h100-sxm", "gemm", {"M": 8192, "N": 8192, "K": 8192}, floor_s=0.1),
        row("attention fwd s16k d128", "h100-sxm", "attention",
            {"heads": 16, "seq_q": 16384, "head_dim": 128}, floor_s=0.2),
        row("attention fwd s16k d128 causal", "h100-sxm", "attention",
            {"heads": 16, "seq_q": 16384, "head_dim": 128, "causal": True}, floor_s=0.2),
        row("gemm 8192^3 bf16", "tpu-v5e", "gemm", {"M": 8192, "N": 8192, "K": 8192}),
        row("attention fwd s16k d128 causal", "tpu-v5e", "attention",
            {"heads": 16, "seq_q": 16384, "head_dim": 128, "causal": True}),
    ]
    for size in (1024, 2048, 4096, 8192, 16384, 32768):
        rows.append(row(f"growth: gemm {size}^2 x 4096", "h100-sxm", "gemm", {"M": size, "N": size, "K": 4096}))
    for seq in (2048, 4096, 8192, 16384, 32768):
        rows.append(row(f"growth: causal attention s{seq}", "h100-sxm", "attention",
                        {"heads": 16, "seq_q": seq, "head_dim": 128, "causal": True}))
    for seq in (4096, 16384, 32768):  # several uneven programs per SM: tails re-rate as neighbours finish
        rows.append(row(f"growth: causal attention s{seq}, 5/SM", "h100-sxm", "attention",
                        {"heads": 16, "seq_q": seq, "head_dim": 64, "causal": True, "block_m": 64, "block_n": 32,
                         "num_warps": 4, "num_stages": 2}))
    for seq in (2048, 8192, 32768):  # three kernels, each at its own occupancy (kernel_resources)
        rows.append(row(f"growth: causal attention backward s{seq}", "h100-sxm", "attention",
                        {"heads": 16, "seq_q": seq, "head_dim": 128, "causal": True, "pass": "bwd"}))
    for seq in (4096, 65536, 262144):  # batch-1 GQA split decode: split kernel, then the combine
        rows.append(row(f"growth: decode b1 32/4 heads s{seq}", "h200-sxm", "attention",
                        {"heads": 32, "kv_heads": 4, "seq_q": 1, "seq_kv": seq, "head_dim": 128}))
    for log2 in (20, 23, 26, 27):  # gpu-stream's launch: one double per thread, one wave of small programs
        rows.append(row(f"growth: stream triad 2^{log2}", "h100-sxm", "elementwise",
                        {"elements": 2**log2, "dtype": "fp64", "inputs": 2, "block_elements": 1024, "num_warps": 32}))
    for log2 in (20, 23, 27):  # 32 threads per block: millions of programs, thousands of identical waves
        rows.append(row(f"growth: stream triad 2^{log2}, 32 threads", "h100-sxm", "elementwise",
                        {"elements": 2**log2, "dtype": "fp64", "inputs": 2, "block_elements": 32, "num_warps": 1}))
    headers = ("case", "arch", "programs", "events", "build ms", "simulate ms", "floor")
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    for r in [headers] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
