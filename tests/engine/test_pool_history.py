"""What a kernel after a barrier does does not depend on how the kernels before it ran:
the fluid pool hands out slots from 0 again when it is idle, and a slot orders flows that
end in the same picosecond, so an uneven second kernel (whose packing on the SMs follows
that order) runs as it would alone."""

from __future__ import annotations

import random

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.trace.kernel import KernelTrace

STEP = 4096


def trace(sizes: list[int], weights: list[int]) -> KernelTrace:
    """Kernels of ``sizes`` programs, each reading its own tensor ``weights[i]`` times and
    doing matrix work each time; three programs fit an SM."""
    n = sum(sizes)
    names = [f"T{i}" for i in range(len(sizes))]
    kernel = {"name": "k", "grid": [n], "resources": {"warps": 8, "local_memory_bytes": 70 * 1024}}
    if len(sizes) > 1:
        kernel["kernel_starts"] = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]
    return KernelTrace.model_validate({
        "schema_version": 1, "kernel": kernel,
        "tensors": {name: {"shape": [n, 8 * STEP // 2], "dtype": "bf16"} for name in names},
        "templates": [{"name": name, "steps": [{"repeat": "w", "loop_var": "j", "transfers": [
            {"tensor": name, "block": ["row", "j"], "bytes": STEP}],
            "compute": [{"unit": "matrix", "flops": 3e7, "dtype": "bf16"}]}]} for name in names],
        "program_template": [i for i, size in enumerate(sizes) for _ in range(size)],
        "program_vars": {"row": list(range(n)), "w": weights},
    })


def test_an_uneven_kernel_after_a_barrier_runs_as_it_would_alone():
    chip = load_arch("b200")
    rng = random.Random(7)
    weights = [rng.randint(1, 8) for _ in range(8000)]
    second = weights[6000:6000 + 1902]
    alone = simulate_kernel(trace([1902], second), chip)
    for first in (2368, 3000):
        both = simulate_kernel(trace([first, 1902], weights[:first] + second), chip)
        assert both.per_kernel_s[1] == alone.latency_s - alone.launch_overhead_s
