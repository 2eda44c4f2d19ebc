"""How close a kernel came to the chip's roofs: its achieved compute and HBM bandwidth as
shares of the peaks, its arithmetic intensity and the chip's ridge point (``simulate``'s
table and ``--json``). Peaks are the datasheet's (no efficiency, at the clock it quotes them
at: with ``power.dvfs.boost`` on, the config's ``clock``, not the boost clock kernels start at),
as on a roofline plot (:func:`accelsim.report.roofline.draw_roof` draws the same roof)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from accelsim.arch.model import Chip
from accelsim.results import KernelResult
from accelsim.trace.kernel import KernelTrace


def unit_peak(chip: Chip, dtype: str) -> tuple[float, str]:
    """The matrix units' peak for ``dtype`` inputs, or the vector units' fp32 peak where
    the matrix unit has no rate for it; with what it is (``bf16 matrix``)."""
    if dtype in chip.matrix.flops_per_cycle_per_core:
        return chip.datasheet_matrix_flops_per_s(dtype), f"{dtype} matrix"
    return chip.datasheet_vector_flops_per_s("fp32"), "fp32 vector"


def compute_peak(trace: KernelTrace, chip: Chip) -> tuple[float, str]:
    """The peak a kernel's flop/s is a share of: the matrix units' for the dtype of its
    matrix work where it has any (the dtype with the most flops, in one pass over its
    steps), else the vector units' for its vector work's dtype (fp32 where it has none,
    or the chip has no rate for that dtype)."""
    flops: dict[tuple[str, str], float] = defaultdict(float)
    for template in trace.templates:
        for step in template.steps:
            for compute in step.compute:
                flops[(compute.unit, compute.dtype)] += compute.flops
    matrix, vector = (_most_flops(flops, unit) for unit in ("matrix", "vector"))
    if matrix is not None:
        return unit_peak(chip, matrix)
    if vector in chip.vector.flops_per_cycle_per_core:
        return chip.datasheet_vector_flops_per_s(vector), f"{vector} vector"
    return chip.datasheet_vector_flops_per_s("fp32"), "fp32 vector"


def _most_flops(flops: dict[tuple[str, str], float], unit: str) -> str | None:
    """The dtype of ``unit``'s work with the most flops (the first in name order of a tie)."""
    used = sorted((-amount, dtype) for (kind, dtype), amount in flops.items() if kind == unit)
    return used[0][1] if used else None


def roofline_figures(result: KernelResult, trace: KernelTrace, chip: Chip) -> dict[str, Any]:
    """A kernel result's place under the chip's roofs: the ``--json``
    keys ``peak_flops_per_s``, ``peak_flops_of``, ``flops_fraction_of_peak``,
    ``peak_hbm_bytes_per_s``, ``hbm_fraction_of_peak``, ``arithmetic_intensity_flops_per_byte``
    (null without HBM traffic) and ``ridge_point_flops_per_byte``."""
    peak, of = compute_peak(trace, chip)
    bandwidth = chip.hbm.bandwidth_bytes_per_s
    hbm_bytes = result.hbm_bytes
    return {
        "peak_flops_per_s": peak,
        "peak_flops_of": of,
        "flops_fraction_of_peak": result.achieved_flops_per_s / peak,
        "peak_hbm_bytes_per_s": bandwidth,
        "hbm_fraction_of_peak": result.achieved_hbm_bytes_per_s / bandwidth,
        "arithmetic_intensity_flops_per_byte": result.flops / hbm_bytes if hbm_bytes > 0 else None,
        "ridge_point_flops_per_byte": peak / bandwidth,
    }
