"""How long Triton capture takes on this machine: the issue's 4096 x 4096 x 4096 matmul
(required: under 10 s) and a few other kernels of ``kernels/triton/``.

    python benchmarks/bench_capture_triton.py

Prints one table; nothing is written. Wall time is one ``capture_triton`` call: importing
the kernel file, building its random inputs, running the programs in Triton's
interpreter and building the trace (importing triton and torch themselves is not timed).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import triton  # noqa: E402, F401  (imported here so that its import is not timed)

from accelsim.capture.triton import capture_triton  # noqa: E402

KERNELS = Path(__file__).resolve().parent.parent / "kernels" / "triton"
LIMIT_S = 10.0
CASES = [
    ("matmul 4096^3 bf16, gemm defaults", "matmul", {"M": "4096", "N": "4096", "K": "4096"}, LIMIT_S),
    ("matmul 1000x700x300 (ragged)", "matmul", {"M": "1000", "N": "700", "K": "300", "block_n": "128"}, None),
    ("attention b1 h16 s2048 d128 causal", "attention",
     {"heads": "16", "seq_q": "2048", "head_dim": "128", "causal": "true"}, None),
    ("layernorm 1024 x 4096", "layernorm", {"rows": "1024", "cols": "4096"}, None),
]


def main() -> None:
    print(f"{'case':40s} {'programs':>9s} {'in full':>8s} {'templates':>9s} {'wall s':>8s}")
    for label, kernel, params, limit in CASES:
        started = time.perf_counter()
        trace = capture_triton(str(KERNELS / f"{kernel}.py"), "run", params)
        wall = time.perf_counter() - started
        sampling = trace.metadata["sampling"]
        verdict = "" if limit is None else ("  ok (< 10 s)" if wall < limit else "  TOO SLOW (limit 10 s)")
        print(f"{label:40s} {sampling['programs']:9d} {sampling['traced_in_full']:8d} {len(trace.templates):9d} "
              f"{wall:8.2f}{verdict}")


if __name__ == "__main__":
    main()
