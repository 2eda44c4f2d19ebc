"""Roofline plots (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accelsim.arch.model import Chip  # noqa: E402
from accelsim.figures import in_default_style  # noqa: E402
from accelsim.report.peaks import unit_peak  # noqa: E402


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


def draw_roof(ax, chip: Chip, x_range: Sequence[float], dtype: str = "bf16", **style) -> None:
    """The chip's roof: HBM bandwidth up to the ridge, then the ``dtype`` matrix peak
    (fp32 vector peak if the matrix unit has no such rate)."""
    peak = unit_peak(chip, dtype)[0]
    bandwidth = chip.hbm.bandwidth_bytes_per_s
    ridge = peak / bandwidth
    right = max(x_range[1], ridge * 2)
    ax.plot([x_range[0], ridge, right], [x_range[0] * bandwidth, peak, peak], label=f"{chip.name} roof ({dtype})", **style)


def draw_identity(ax, values: Sequence[float]) -> None:
    """Predicted = measured, with a +-10% band, on log-log axes spanning ``values``."""
    low, high = min(values or [1e-6]) / 1.5, max(values or [1e-3]) * 1.5
    ax.plot([low, high], [low, high], color="black", linewidth=1)
    ax.fill_between([low, high], [low * 0.9, high * 0.9], [low * 1.1, high * 1.1], color="grey", alpha=0.2,
                    label="+-10%")
    ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high))


def finish_log_log(fig, ax, path: Path, xlabel: str, ylabel: str, dpi: int = 120) -> Path:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


@in_default_style
def plot_roofline(chips: Sequence[Chip], points: Sequence[RooflinePoint], path: Path, dtype: str = "bf16") -> Path:
    """One roof per chip (peak ``dtype`` matrix throughput and datasheet HBM bandwidth),
    with each kernel's achieved throughput at its arithmetic intensity."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    intensities = [p.intensity for p in points] or [1.0]
    x = [min(intensities + [1.0]) / 4, max(intensities + [1e4]) * 4]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, chip in enumerate(chips):
        color = colors[i % len(colors)]
        draw_roof(ax, chip, x, dtype, color=color)
        for point in points:
            if point.chip == chip.name:
                ax.scatter(point.intensity, point.achieved, color=color, zorder=3)
                ax.annotate(point.label, (point.intensity, point.achieved), fontsize=7,
                            xytext=(4, -10), textcoords="offset points")
    ax.set_title(f"Roofline ({dtype} matrix peak, datasheet HBM bandwidth)")
    return finish_log_log(fig, ax, path, "arithmetic intensity (flop per HBM byte)", "achieved flop/s")
