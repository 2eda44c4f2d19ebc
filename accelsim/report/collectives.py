"""The predicted-vs-measured report of ``accelsim validate --system``: collective records
(nccl-tests style) against the node's NCCL model, as Markdown and PNG plots."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accelsim.figures import in_default_style  # noqa: E402
from accelsim.report.roofline import draw_identity  # noqa: E402
from accelsim.results import relative_error  # noqa: E402
from accelsim.units import format_quantity  # noqa: E402
from accelsim.validate.calibrate import is_held_out  # noqa: E402
from accelsim.validate.collectives import CollectiveMeasurement  # noqa: E402

REPORT_FILES = ("report.md", "busbw_vs_size.png", "predicted_vs_measured.png")
"""What :func:`write_collective_report` writes into its folder."""
FLOOR_SIZES = (2**10, 8 * 2**30)
"""The sizes the issue's floors speak of: 1 KiB to 8 GiB, and from 64 MiB up."""
LARGE = 64 * 2**20


@dataclass(frozen=True)
class CollectiveComparison:
    measurement: CollectiveMeasurement
    predicted_s: float
    algorithm: str
    protocol: str
    predicted_busbw: float

    @property
    def error(self) -> float:
        """Predicted / measured - 1 on bus bandwidth (nccl-tests' figure of merit)."""
        return relative_error(self.predicted_busbw, self.measurement.busbw_bytes_per_s)

    @property
    def held_out(self) -> bool:
        return is_held_out(self.measurement.id)


def _mape(items: Sequence[CollectiveComparison]) -> str:
    return f"{sum(abs(c.error) for c in items) / len(items):.1%}" if items else "-"


def _max(items: Sequence[CollectiveComparison]) -> str:
    return f"{max(abs(c.error) for c in items):.1%}" if items else "-"


@in_default_style
def write_collective_report(comparisons: Sequence[CollectiveComparison], system: str, out: Path, header: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path, by_size, scatter = (out / name for name in REPORT_FILES)
    plots = [plot_busbw(comparisons, by_size), plot_scatter(comparisons, scatter)]
    lines = [f"# Validation: {system} (collectives)", "", header, "",
             "Error = predicted / measured - 1 on bus bandwidth (nccl-tests' definition; negative: predicted "
             "slower than measured).", "", "## Summary", "",
             "| set | records | MAPE | max abs, 1 KiB to 8 GiB | max abs, >= 64 MiB |",
             "| --- | ---: | ---: | ---: | ---: |"]
    sides = (("all", list(comparisons)), ("train", [c for c in comparisons if not c.held_out]),
             ("held-out", [c for c in comparisons if c.held_out]))
    for name, items in sides:
        span = [c for c in items if FLOOR_SIZES[0] <= c.measurement.size_bytes <= FLOOR_SIZES[1]]
        large = [c for c in items if c.measurement.size_bytes >= LARGE]
        lines.append(f"| {name} | {len(items)} | {_mape(items)} | {_max(span)} | {_max(large)} |")
    worst = sorted(comparisons, key=lambda c: -abs(c.error))[:10]
    lines += ["", "## Worst cases", "", "| record | measured busbw | predicted busbw | error | model ran |",
              "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {c.measurement.id} | {_bw(c.measurement.busbw_bytes_per_s)} | {_bw(c.predicted_busbw)} | "
              f"{c.error:+.1%} | {_ran(c)} |" for c in worst]
    lines += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots]
    lines += ["", "## Every record", "",
              "| record | split | collective | ranks | size | measured time | predicted time | measured busbw | "
              "predicted busbw | error | NCCL ran | model ran |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for c in sorted(comparisons, key=lambda c: (c.measurement.collective, c.measurement.ranks,
                                                 c.measurement.size_bytes, c.measurement.id)):
        m = c.measurement
        lines.append(f"| {m.id} | {'held-out' if c.held_out else 'train'} | {m.collective} | {m.ranks} | "
                     f"{format_quantity(m.size_bytes, 'bytes')} | {m.time_s * 1e6:.2f} us | {c.predicted_s * 1e6:.2f} us | "
                     f"{_bw(m.busbw_bytes_per_s)} | {_bw(c.predicted_busbw)} | {c.error:+.1%} | {m.algorithm} | "
                     f"{_ran(c)} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _bw(value: float) -> str:
    return f"{value / 1e9:.2f} GB/s"


def _ran(c: CollectiveComparison) -> str:
    return f"{c.algorithm}/{c.protocol}" if c.protocol else c.algorithm


def _groups(comparisons: Sequence[CollectiveComparison]) -> dict[tuple[str, int, str], list[CollectiveComparison]]:
    groups: dict[tuple[str, int, str], list[CollectiveComparison]] = {}
    for c in comparisons:
        m = c.measurement
        groups.setdefault((m.collective, m.ranks, m.algorithm), []).append(c)
    return {k: sorted(v, key=lambda c: c.measurement.size_bytes) for k, v in sorted(groups.items())}


def plot_busbw(comparisons: Sequence[CollectiveComparison], path: Path) -> Path:
    """Bus bandwidth against size per (collective, ranks, what ran): measured points,
    predicted lines."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (kind, ranks, ran), items in _groups(comparisons).items():
        sizes = [c.measurement.size_bytes for c in items]
        line = ax.plot(sizes, [c.predicted_busbw / 1e9 for c in items], linewidth=1.2, marker="x", markersize=5,
                       label=f"{kind}, {ranks} ranks, {ran}")[0]
        ax.scatter(sizes, [c.measurement.busbw_bytes_per_s / 1e9 for c in items], s=14, color=line.get_color())
    ax.set_title("lines and crosses: predicted; dots: measured", fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    return _save(fig, ax, path)


def plot_scatter(comparisons: Sequence[CollectiveComparison], path: Path) -> Path:
    """Predicted against measured time, log-log, with a +-10% band."""
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    for (kind, ranks, ran), items in _groups(comparisons).items():
        ax.scatter([c.measurement.time_s for c in items], [c.predicted_s for c in items], s=14,
                   label=f"{kind}, {ranks} ranks, {ran}")
    draw_identity(ax, [v for c in comparisons for v in (c.measurement.time_s, c.predicted_s)])
    ax.set(xlabel="measured time (s)", ylabel="predicted time (s)")
    return _save(fig, ax, path)


def _save(fig, ax, path: Path) -> Path:
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
