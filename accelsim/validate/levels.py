"""Which measurements may fit hardware parameters: microbenchmark-level records only.

A record is *microbenchmark-level* when its kernel exercises one hardware mechanism with
no algorithm of its own between the measurement and the parameter: a STREAM kernel or a
device copy streams bytes through HBM with one launch and one grid of identical
programs, so its time is bandwidth, loads in flight, launch and CTA costs, the
parameters a fit moves. Every other family is *kernel-level*: a GEMM, an attention or a
norm kernel is an implementation (tiling, pipelining, warp specialisation, fusion) whose
time also holds whatever the model of that implementation lacks, and a parameter fitted
on it absorbs that lack (a per-program overhead of 4.9 us fitted on attention stood for
attention prologues; a launch overhead fitted on one repository's GEMMs stood for its
timing method). Kernel-level records check a model; they never fit one.
"""

from __future__ import annotations

from collections.abc import Sequence

from accelsim.errors import InputError
from accelsim.validate.compare import Measurement

MICROBENCHMARK_FAMILIES: dict[str, str] = {
    "elementwise": "STREAM-like kernels (gpu-stream's init, read, scale and triad at any occupancy; torch add, mul, "
                   "fill): bytes streamed through HBM by one grid of identical programs",
    "copy": "device-to-device copies: one read and one write stream",
}
"""Kernel families whose records are microbenchmark-level, and why (``docs/accuracy.md``,
"What may be fitted")."""


def is_microbenchmark_level(m: Measurement) -> bool:
    return m.family in MICROBENCHMARK_FAMILIES


def refuse_kernel_level(records: Sequence[Measurement]) -> None:
    """Raise one line naming the first kernel-level record's file and family: calibrate fits
    hardware parameters on microbenchmark-level records only."""
    kernel_level = [m for m in records if not is_microbenchmark_level(m)]
    if not kernel_level:
        return
    first = kernel_level[0]
    families = sorted({m.family for m in kernel_level})
    raise InputError(
        f"{len(kernel_level)} kernel-level records ({', '.join(families)}; first in {first.file}): calibrate fits "
        f"hardware parameters on microbenchmark records only ({', '.join(MICROBENCHMARK_FAMILIES)}); check kernels "
        "with accelsim validate", field="measurements")
