"""Wall time of Pallas capture (jaxpr tracing, index maps over the grid, work counting)
for growing matmuls and attention.

    python benchmarks/bench_capture_pallas.py
"""

from __future__ import annotations

import time
from pathlib import Path

from accelsim.capture.pallas import capture_pallas

KERNELS = Path(__file__).resolve().parent.parent / "kernels" / "pallas"

CASES = [
    ("matmul 1024^3, 256 blocks", "matmul.py", "run", {"M": 1024, "N": 1024, "K": 1024, "block_m": 256, "block_n": 256, "block_k": 256}),
    ("matmul 4096^3, 512 blocks", "matmul.py", "run", {"M": 4096, "N": 4096, "K": 4096, "block_m": 512, "block_n": 512, "block_k": 512}),
    ("matmul 4096^3, 128 blocks", "matmul.py", "run", {"M": 4096, "N": 4096, "K": 4096, "block_m": 128, "block_n": 128, "block_k": 128}),
    ("attention 8k causal d128", "attention.py", "run", {"heads": 8, "seq_q": 8192, "head_dim": 128, "causal": "true", "block_m": 512, "block_n": 512}),
]


def main() -> None:
    print(f"{'case':34s} {'programs':>9s} {'templates':>9s} {'seconds':>8s}")
    for label, file, function, params in CASES:
        started = time.perf_counter()
        trace = capture_pallas(str(KERNELS / file), function, {k: str(v) for k, v in params.items()})
        elapsed = time.perf_counter() - started
        print(f"{label:34s} {trace.num_programs:9d} {len(trace.templates):9d} {elapsed:8.2f}"
              + ("   OVER the 10 s floor" if "4096" in label and elapsed > 10 else ""))


if __name__ == "__main__":
    main()
