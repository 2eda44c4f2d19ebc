"""Roofline plots (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accelsim.arch.model import Chip  # noqa: E402


@dataclass(frozen=True)
class RooflinePoint:
    label: str
    chip: str
    flops: float
    hbm_bytes: float
    latency_s: float

    @property
    def intensity(self) -> float:
        return self.flops / max(self.hbm_bytes, 1.0)

    @property
    def achieved(self) -> float:
        return self.flops / self.latency_s


def plot_roofline(chips: Sequence[Chip], points: Sequence[RooflinePoint], path: Path, dtype: str = "bf16") -> Path:
    """One roof per chip (peak ``dtype`` matrix throughput and datasheet HBM bandwidth),
    with each kernel's achieved throughput at its arithmetic intensity."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    intensities = [p.intensity for p in points] or [1.0]
    x = [min(intensities + [1.0]) / 4, max(intensities + [1e4]) * 4]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, chip in enumerate(chips):
        color = colors[i % len(colors)]
        peak = chip.matrix_flops_per_s(dtype) if dtype in chip.matrix.flops_per_cycle_per_core else chip.vector_flops_per_s("fp32")
        bw = chip.hbm.bandwidth_bytes_per_s
        ridge = peak / bw
        ax.plot([x[0], ridge, x[1]], [x[0] * bw, peak, peak], color=color, label=f"{chip.name} roof")
        for point in points:
            if point.chip == chip.name:
                ax.scatter(point.intensity, point.achieved, color=color, zorder=3)
                ax.annotate(point.label, (point.intensity, point.achieved), fontsize=7,
                            xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop per HBM byte)")
    ax.set_ylabel("achieved flop/s")
    ax.set_title(f"Roofline ({dtype} matrix peak, datasheet HBM bandwidth)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
