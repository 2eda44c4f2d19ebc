"""Sweep plots (matplotlib, no display): a metric against one parameter, a heatmap over
two, and the Pareto front of two objectives. Marker shapes show each run's bound.

Runs whose memory footprint does not fit in HBM (``fits`` false) are left out.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from accelsim.figures import in_default_style
from accelsim.study.plan import SweepPlan
from accelsim.study.space import quantity
from accelsim.study.summary import pareto_front, pareto_points
from accelsim.study.table import Record
from accelsim.units import format_quantity

MAX_PANELS = 12
MAX_SERIES = 10
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def format_metric(name: str, value: float) -> str:
    """A metric value with its unit, read from its name (``latency_s``, ``hbm_bytes``, ...)."""
    base = name.split(".")[0]
    if base.endswith("flops_per_s"):
        return format_quantity(value, "flops_per_s")
    if base.endswith("bytes_per_s"):
        return format_quantity(value, "bytes_per_s")
    if base.endswith("_s"):
        return format_quantity(value, "seconds")
    if base.endswith("bytes"):
        return format_quantity(value, "bytes")
    return f"{value:.3g}"


def numeric_metrics(plan: SweepPlan, recs: Sequence[Record], metrics: Sequence[str]) -> list[str]:
    return [m for m in metrics if any(r.number(m) is not None and m in r.metrics for r in recs)]


def _usable(recs: Sequence[Record], metric: str) -> list[Record]:
    return [r for r in recs if r.status == "ok" and r.metrics.get("fits", True) and r.number(metric) is not None]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def _bound_markers(recs: Sequence[Record]) -> dict[str, str]:
    bounds = sorted({str(r.metrics.get("bound")) for r in recs})
    return {b: MARKERS[i % len(MARKERS)] for i, b in enumerate(bounds)}


def _x_axis(recs: Sequence[Record], param: str):
    """A function record -> x position, tick labels for categorical values, and whether to use a log axis."""
    numbers = [r.param(param).number for r in recs]
    if all(n is not None for n in numbers):
        positive = [n for n in numbers if n > 0]
        log = bool(positive) and len(positive) == len(numbers) and max(positive) / min(positive) >= 20
        return (lambda r: r.param(param).number), None, log
    labels = list(dict.fromkeys(r.param(param).label for r in sorted(recs, key=lambda r: r.point.index)))
    index = {label: i for i, label in enumerate(labels)}
    return (lambda r: float(index[r.param(param).label])), labels, False


def _finish_axes(ax, recs, metric, param, labels, log_x) -> None:
    values = [r.number(metric) for r in recs]
    positive = [v for v in values if v and v > 0]
    if positive and len(positive) == len(values) and max(positive) / min(positive) >= 20:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_metric(metric, v)))
    if log_x:
        ax.set_xscale("log")
    if labels is not None:
        ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=7)
    else:
        unit = quantity(recs[0].param(param).label) if recs else None
        if unit is not None:
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / unit[2]:g} {unit[1]}"))
    ax.tick_params(labelsize=7)
    ax.set_xlabel(param)
    ax.set_ylabel(metric)
    ax.grid(True, which="both", alpha=0.3)


def _points(ax, members: Sequence[Record], xf, metric: str, color, markers: dict[str, str], size: float) -> None:
    """One scatter per bound (marker shape), not one per point: sweeps plot thousands."""
    by_bound: dict[str, list[Record]] = defaultdict(list)
    for r in members:
        by_bound[str(r.metrics.get("bound"))].append(r)
    for bound, group in by_bound.items():
        ax.scatter([xf(r) for r in group], [r.number(metric) for r in group], color=color, marker=markers[bound],
                   zorder=3, s=size)


def _series(ax, members: list[Record], xf, metric: str, label: str, color, markers: dict[str, str]) -> None:
    members = sorted(members, key=xf)
    ax.plot([xf(r) for r in members], [r.number(metric) for r in members], color=color, alpha=0.7, label=label)
    _points(ax, members, xf, metric, color, markers, 22)


def _bound_legend(fig, markers: dict[str, str]) -> None:
    handles = [plt.Line2D([], [], color="gray", marker=m, linestyle="", label=f"{b}-bound") for b, m in markers.items()]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=7, frameon=False)


def _panels(count: int, width: float, height: float):
    """A figure with ``count`` panels, three to a row; the unused ones hidden."""
    cols = min(3, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


@in_default_style
def plot_vs_param(plan: SweepPlan, recs: Sequence[Record], metric: str, param: str, path: Path) -> Path | None:
    """``metric`` against ``param``: one line per workload if only ``param`` varies, else one
    panel per workload with a line per setting of the other parameters (or points, if too many)."""
    usable = _usable(recs, metric)
    if not usable:
        return None
    markers = _bound_markers(usable)
    xf, labels, log_x = _x_axis(usable, param)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    others = [n for n in plan.varied if n != param]
    jobs = [j for j in plan.jobs if any(r.job_index == j.index for r in usable)][:MAX_PANELS]
    if not others:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for i, job in enumerate(jobs):
            _series(ax, [r for r in usable if r.job_index == job.index], xf, metric, job.name,
                    colors[i % len(colors)], markers)
        _finish_axes(ax, usable, metric, param, labels, log_x)
        ax.legend(fontsize=7)
        ax.set_title(f"{metric} vs {param}")
    else:
        fig, axes = _panels(len(jobs), 5.2, 3.8)
        for ax, job in zip(axes, jobs):
            members = [r for r in usable if r.job_index == job.index]
            groups: dict[str, list[Record]] = defaultdict(list)
            for r in members:
                groups[", ".join(f"{n}={r.param(n).label}" for n in others)].append(r)
            if plan.spec.spec.sampling == "grid" and len(groups) <= MAX_SERIES:
                for i, (label, group) in enumerate(groups.items()):
                    _series(ax, group, xf, metric, label, colors[i % len(colors)], markers)
                ax.legend(fontsize=6)
            else:
                _points(ax, members, xf, metric, colors[0], markers, 10)
            _finish_axes(ax, members, metric, param, labels, log_x)
            ax.set_title(job.name, fontsize=8)
        fig.suptitle(f"{metric} vs {param}")
    _bound_legend(fig, markers)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@in_default_style
def plot_heatmap(plan: SweepPlan, recs: Sequence[Record], metric: str, path: Path) -> Path | None:
    """``metric`` over the two varied parameters (grid only), one panel per workload; each
    cell shows the value and the bound."""
    if len(plan.varied) != 2 or plan.spec.spec.sampling != "grid":
        return None
    usable = _usable(recs, metric)
    if not usable:
        return None
    px, py = plan.varied
    order = {n: list(dict.fromkeys(r.param(n).label for r in sorted(recs, key=lambda r: _sort_key(r, n))))
             for n in (px, py)}
    jobs = [j for j in plan.jobs if any(r.job_index == j.index for r in usable)][:MAX_PANELS]
    fig, axes = _panels(len(jobs), 5.4, 4.2)
    for ax, job in zip(axes, jobs):
        grid = np.full((len(order[py]), len(order[px])), np.nan)
        text: dict[tuple[int, int], str] = {}
        for r in usable:
            if r.job_index != job.index:
                continue
            i, j = order[py].index(r.param(py).label), order[px].index(r.param(px).label)
            grid[i, j] = r.number(metric)
            text[(i, j)] = f"{format_metric(metric, grid[i, j])}\n{r.metrics.get('bound')}"
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
        bar = fig.colorbar(image, ax=ax, fraction=0.046)
        bar.formatter = FuncFormatter(lambda v, _: format_metric(metric, v))
        bar.update_ticks()
        low, high = np.nanmin(grid), np.nanmax(grid)
        for (i, j), t in text.items():
            light = high == low or (grid[i, j] - low) / (high - low) < 0.5  # viridis_r is light at the low end
            ax.text(j, i, t, ha="center", va="center", fontsize=6, color="black" if light else "white")
        ax.set_xticks(range(len(order[px])), order[px], rotation=30, fontsize=7)
        ax.set_yticks(range(len(order[py])), order[py], fontsize=7)
        ax.set_xlabel(px)
        ax.set_ylabel(py)
        ax.set_title(job.name, fontsize=8)
    fig.suptitle(f"{metric} over {px} and {py}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sort_key(r: Record, name: str) -> tuple:
    number = r.param(name).number
    return (0, number, r.point.index) if number is not None else (1, 0.0, r.point.index)


@in_default_style
def plot_pareto(plan: SweepPlan, recs: Sequence[Record], path: Path) -> Path | None:
    pareto = plan.spec.spec.pareto
    if pareto is None:
        return None
    jobs = [j for j in plan.jobs if pareto_points(plan, recs, j.index)][:MAX_PANELS]
    if not jobs:
        return None
    fig, axes = _panels(len(jobs), 5.2, 3.8)
    for ax, job in zip(axes, jobs):
        points = pareto_points(plan, recs, job.index)
        front = pareto_front(points, pareto.x_goal, pareto.y_goal)
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=12, color="lightgray", label="all points")
        ax.plot([p[0] for p in front], [p[1] for p in front], "o-", color="C3", label="Pareto front")
        ax.set_xlabel(f"{pareto.x} ({pareto.x_goal})")
        ax.set_ylabel(f"{pareto.y} ({pareto.y_goal})")
        ax.grid(True, alpha=0.3)
        ax.set_title(job.name, fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(plan: SweepPlan, recs: Sequence[Record], metrics: Sequence[str], folder: Path) -> list[str]:
    """The plots for ``metrics`` (those that are numbers), written under ``folder``; their
    names relative to its parent."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path | None] = []
    for metric in numeric_metrics(plan, recs, metrics):
        for param in plan.varied:
            written.append(plot_vs_param(plan, recs, metric, param, folder / f"{_slug(metric)}_vs_{_slug(param)}.png"))
        written.append(plot_heatmap(plan, recs, metric, folder / f"{_slug(metric)}_heatmap.png"))
    written.append(plot_pareto(plan, recs, folder / "pareto.png"))
    return [f"{folder.name}/{p.name}" for p in written if p is not None]


@in_default_style
def plot_ranking(title: str, labels: Sequence[str], latencies: Sequence[float], bounds: Sequence[str],
                 path: Path, shown: int = 40) -> Path:
    """Predicted latency of ranked configs (fastest at the top), coloured by bound."""
    labels, latencies, bounds = list(labels[:shown]), list(latencies[:shown]), list(bounds[:shown])
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    palette = {b: colors[i % len(colors)] for i, b in enumerate(sorted(set(bounds)))}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.28 * len(labels)))
    y = np.arange(len(labels))
    ax.barh(y, latencies, color=[palette[b] for b in bounds])
    ax.set_yticks(y, labels, fontsize=6.5)
    ax.invert_yaxis()
    for yi, value in zip(y, latencies):
        ax.text(value, yi, " " + format_metric("latency_s", value), va="center", fontsize=6.5)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_metric("latency_s", v)))
    ax.set_xlim(0, max(latencies) * 1.25)
    ax.set_xlabel("predicted latency")
    ax.set_title(title, fontsize=9)
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c, label=f"{b}-bound") for b, c in palette.items()],
              fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
