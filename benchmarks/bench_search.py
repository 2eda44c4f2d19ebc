"""How fast ``config=auto`` is: wall time of the pruned, memoised search per family, how
many configs it replays, and how that grows with the problem.

    python benchmarks/bench_search.py

Prints one table; nothing is written. Of the configs ``simulated`` (not pruned by a
bound), ``replayed`` ran a replay; the others came from the search's replay memo. One run per row: this machine's
timings vary by up to 1.6x from run to run.
"""

from __future__ import annotations

import time

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import best_config, split_params


def row(label: str, arch: str, family_name: str, params: dict) -> tuple:
    chip = load_arch(arch)
    family = get_family(family_name)
    values, _, _ = split_params(family, {k: str(v) for k, v in params.items()})
    started = time.perf_counter()
    search = best_config(family, values, chip)
    wall = time.perf_counter() - started
    best = search.best
    config = " ".join(f"{k}={v}" for k, v in best.config.items())
    return (label, arch, search.searched, search.simulated, search.replayed, best.trace.num_programs,
            f"{best.sim.latency_s * 1e6:.1f}", config, f"{wall:.2f}")


def main() -> None:
    rows = [
        row("gemm 8192^3 bf16", "h100-sxm", "gemm", {"M": 8192, "N": 8192, "K": 8192}),
        row("gemm 8192^3 bf16", "tpu-v5e", "gemm", {"M": 8192, "N": 8192, "K": 8192}),
        row("attention b8 h16 s2048 d64", "h100-sxm", "attention",
            {"batch": 8, "heads": 16, "seq_q": 2048, "head_dim": 64}),
        row("attention bwd b8 h16 s2048 d64 causal", "h100-sxm", "attention",
            {"batch": 8, "heads": 16, "seq_q": 2048, "head_dim": 64, "causal": True, "pass": "bwd"}),
        row("attention bwd b8 h16 s2048 d128 causal", "tpu-v5p", "attention",
            {"batch": 8, "heads": 16, "seq_q": 2048, "head_dim": 128, "causal": True, "pass": "bwd"}),
        row("elementwise add 2^26 bf16", "h100-sxm", "elementwise",
            {"elements": 2**26, "dtype": "bf16", "inputs": 2, "outputs": 1}),
        row("layernorm 8192 x 8192", "h100-sxm", "layernorm", {"rows": 8192, "cols": 8192}),
    ]
    for seq in (1024, 2048, 4096):
        rows.append(row(f"growth: causal attention b4 h32 s{seq}", "h100-sxm", "attention",
                        {"batch": 4, "heads": 32, "seq_q": seq, "head_dim": 128, "causal": True}))
    headers = ("case", "arch", "configs", "simulated", "replayed", "programs (best)", "latency us", "best config", "wall s")
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    for r in [headers] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
