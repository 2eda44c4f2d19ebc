"""The predicted-vs-measured report of ``accelsim validate``: Markdown and PNG plots."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accelsim.arch.loader import measured_config  # noqa: E402
from accelsim.arch.model import Chip  # noqa: E402
from accelsim.figures import in_default_style  # noqa: E402
from accelsim.report.roofline import draw_identity, draw_roof, finish_log_log  # noqa: E402
from accelsim.results import RecordComparison, relative_error  # noqa: E402
from accelsim.validate.compare import (  # noqa: E402
    Comparison, Measurement, Refused, config_rankings, kernel_rows, summarise,
)
from accelsim.validate.fit_status import STATUSES  # noqa: E402
from accelsim.validate.grouping import implementation_key, source_key  # noqa: E402
from accelsim.validate.leave_one_out import LeftOutSource  # noqa: E402


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:+.1f}%"


REPORT_FILES = ("report.md", "records.json", "predicted_vs_measured.png", "error_by_family.png", "roofline.png")
"""What :func:`write_report` writes into its folder: the report, every record's comparison
as data (what ``validation/accuracy_headline.py`` reads), and three plots."""
RECORDS_KIND = "validation-records"


def never_fitted(m: Measurement) -> str:
    """The status of every record on a config no fit touched (:mod:`accelsim.validate.fit_status`)."""
    return STATUSES[0]


@in_default_style
def write_report(comparisons: Sequence[Comparison], chip: Chip, out: Path, header: str,
                 refused: Sequence[Refused] = (), status: Callable[[Measurement], str] = never_fitted,
                 leave_one_out: Sequence[LeftOutSource] = (), overrides: Sequence[str] = ()) -> Path:
    """``report.md``, ``records.json`` and the plots of ``comparisons`` on ``chip`` (with
    ``overrides``); ``status`` says of each record whether a fit of the config touched it
    (:data:`STATUSES`), so that every table keeps never-fitted records apart from fitted and
    held-out ones."""
    arch = chip.name
    out.mkdir(parents=True, exist_ok=True)
    path, records_path, scatter, by_family, roofline = (out / name for name in REPORT_FILES)
    plots = [
        plot_predicted_vs_measured(comparisons, scatter),
        plot_error_by_family(comparisons, by_family),
        plot_roofline_points(comparisons, chip, roofline),
    ]
    statuses = {id(c): status(c.measurement) for c in comparisons}
    lines = [f"# Validation: {arch}", "", header, "",
             "Error = predicted / measured - 1 (negative: predicted faster than measured). Status: *never fitted* "
             "(no value of the config was fitted on the record: the honest numbers), *held-out* (its file was "
             "fitted on, the record held out), *fitted* (a value was fitted on it), *derived* (a published value "
             "of its chip was derived from it).", ""]
    lines += _summary_section(comparisons, statuses)
    lines += _breakdown_section("By implementation", "implementation", comparisons, statuses,
                                lambda c: (c.measurement.family, implementation_key(c.measurement)))
    lines += _breakdown_section("By source", "source", comparisons, statuses,
                                lambda c: (c.measurement.family, source_key(c.measurement)))
    lines += _leave_one_out_section(leave_one_out)
    rankings = config_rankings(comparisons)
    lines += ["", "## Config rankings", ""]
    if rankings:
        lines += ["| kernel | configs | Kendall tau |", "| --- | ---: | ---: |"]
        lines += [f"| {key} | {n} | {'n/a (all tied)' if math.isnan(tau) else f'{tau:.2f}'} |" for key, n, tau in rankings]
        lines += ["", "Kendall tau-b of predicted against measured latency over the configs of one kernel "
                  "(1: the simulator orders them as the hardware does)."]
    else:
        lines.append("No kernel was measured with several configs.")
    lines += _kernel_section(comparisons)
    if refused:
        lines += ["", "## Records not simulated", "", "Their config is one the simulator refuses:", "",
                  "| record | reason |", "| --- | --- |"]
        lines += [f"| {r.measurement.id} | {r.reason} |" for r in refused]
    worst = sorted(comparisons, key=lambda c: -abs(c.error))[:10]
    lines += ["", "## Worst cases", "", "| record | measured | predicted | error | bound |", "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {c.measurement.id} | {c.measurement.latency_s * 1e6:.1f} us | {c.predicted_s * 1e6:.1f} us | "
              f"{_pct(c.error)} | {c.bound} |" for c in worst]
    lines += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots]
    lines += ["", "## Every record", "", "| record | status | implementation | measured | predicted | error | config |",
              "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    for c in comparisons:
        config = " ".join(f"{k}={v}" for k, v in c.config.items())
        if c.measurement.conditions:  # how the device ran, applied to the chip (a locked clock)
            config += " (at " + ", ".join(c.measurement.conditions) + ")"
        if c.at_read_clock:
            config += f" (at {c.clock_hz / 1e6:.0f} MHz, the SM clock read while it was timed)"
        lines.append(f"| {c.measurement.id} | {statuses[id(c)]} | {implementation_key(c.measurement)} | "
                     f"{c.measurement.latency_s * 1e6:.1f} us | {c.predicted_s * 1e6:.1f} us | {_pct(c.error)} | {config} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_records(records_path, comparisons, statuses, arch, overrides, header)
    return path


def write_records(path: Path, comparisons: Sequence[Comparison], statuses: dict[int, str], arch: str,
                  overrides: Sequence[str], header: str) -> None:
    """Every record's comparison as data: what ``validation/accuracy_headline.py`` tabulates."""
    data = {"schema_version": 1, "kind": RECORDS_KIND, "config": arch, "overrides": list(overrides),
            "header": header, "records": [compared_record(c, statuses[id(c)]).to_json() for c in comparisons]}
    path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def compared_record(c: Comparison, status: str) -> RecordComparison:
    """A comparison in the results schema, with the record's fit ``status``."""
    m = c.measurement
    return RecordComparison(measured_on=measured_config(m.arch), id=m.id, family=m.family,
                            implementation=implementation_key(m), source=source_key(m), status=status,
                            measured_s=m.latency_s, predicted_s=c.predicted_s)


def _summary_section(comparisons: Sequence[Comparison], statuses: dict[int, str]) -> list[str]:
    lines = ["## Summary", "", "| set | family | records | MAPE | median abs | p90 abs | mean signed |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    sets = [("all", list(comparisons))] + [(s, [c for c in comparisons if statuses[id(c)] == s]) for s in STATUSES]
    for name, items in sets:
        for s in summarise(items, key=lambda c: (c.measurement.family,)):
            lines.append(f"| {name} | {s.group[0]} | {s.count} | {s.mape:.1%} | {s.median_abs:.1%} | "
                         f"{s.p90_abs:.1%} | {_pct(s.mean_signed)} |")
    return lines


def _breakdown_section(title: str, what: str, comparisons: Sequence[Comparison], statuses: dict[int, str],
                       key: Callable[[Comparison], tuple[str, str]]) -> list[str]:
    """Per status, family and ``what`` (an implementation or a source): records, MAPE, worst."""
    lines = ["", f"## {title}", "", f"| status | family | {what} | records | MAPE | median abs | mean signed | worst |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for status in STATUSES:
        items = [c for c in comparisons if statuses[id(c)] == status]
        for s in summarise(items, key=key):
            lines.append(f"| {status} | {s.group[0]} | {s.group[1]} | {s.count} | {s.mape:.1%} | {s.median_abs:.1%} | "
                         f"{_pct(s.mean_signed)} | {s.worst.measurement.id} ({_pct(s.worst.error)}) |")
    return lines


def _leave_one_out_section(results: Sequence[LeftOutSource]) -> list[str]:
    """Each source's records predicted with the values fitted on every other source's
    microbenchmark-level records (``validate --leave-one-source-out``)."""
    if not results:
        return []
    lines = ["", "## Leave one source out", "",
             "Each source's records, predicted with the config as given and with the values fitted "
             "(`--fit`) on the microbenchmark-level records of every other source; none of the source's own records "
             "was fitted on.", "",
             "| left out | records | fitted on | fitted values | MAPE as given | MAPE fitted without it | mean signed |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for r in results:
        fitted_on = (f"{r.train_records} records of {', '.join(r.train_sources)}" if r.train_records
                     else "nothing (no other source has microbenchmark records)")
        values = ", ".join(r.overrides) or "-"
        lines.append(f"| {r.source} | {len(r.comparisons)} | {fitted_on} | {values} | {r.mape_given:.1%} | "
                     f"{r.mape_fitted:.1%} | {_pct(r.mean_signed_fitted)} |")
    return lines


def _kernel_section(comparisons: Sequence[Comparison]) -> list[str]:
    """Records timed kernel by kernel: the kernels the simulator pairs (as many as it
    simulates), with their MAPE; a call of several kernels is listed kernel by kernel."""
    rows = kernel_rows(comparisons)
    if not rows:
        return []
    paired = [r for r in rows if r.predicted_s is not None]
    errors = [abs(relative_error(r.predicted_s, r.measured_s)) for r in paired]
    calls = {id(r.comparison) for r in rows}
    lines = ["", "## Kernels within a call", "",
             f"{len(calls)} records were timed kernel by kernel (device time, launch gaps left out). "
             + (f"{len(paired)} kernels pair with a simulated one (the call launched as many as the trace has, besides memsets, copies and fills): "
                f"MAPE {sum(errors) / len(errors):.1%}, each against the simulated kernel less its launch."
                if paired else "None pairs with a simulated kernel (the calls launched other numbers of kernels, besides "
                "memsets, copies and fills).")]
    several = [r for r in rows if len(r.comparison.measurement.kernel_device_s) > 1 or len(r.comparison.per_kernel_s) > 1]
    if several:
        lines += ["", "| record | kernel | measured | predicted | error |", "| --- | --- | ---: | ---: | ---: |"]
        for r in several:
            predicted = "-" if r.predicted_s is None else f"{r.predicted_s * 1e6:.1f} us"
            error = "-" if r.predicted_s is None else _pct(relative_error(r.predicted_s, r.measured_s))
            name = r.name if len(r.name) <= 48 else r.name[:45] + "..."
            lines.append(f"| {r.comparison.measurement.id} | {r.index}: `{name}` | {r.measured_s * 1e6:.1f} us | "
                         f"{predicted} | {error} |")
    return lines


def plot_predicted_vs_measured(comparisons: Sequence[Comparison], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 6))
    families = sorted({c.measurement.family for c in comparisons})
    for family in families:
        items = [c for c in comparisons if c.measurement.family == family]
        ax.scatter([c.measurement.latency_s for c in items], [c.predicted_s for c in items], label=family, s=18)
    draw_identity(ax, [v for c in comparisons for v in (c.measurement.latency_s, c.predicted_s)])
    ax.set_xlabel("measured latency (s)")
    ax.set_ylabel("predicted latency (s)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_roofline_points(comparisons: Sequence[Comparison], chip: Chip, path: Path) -> Path:
    """Each kernel at its arithmetic intensity: measured (filled) and predicted (hollow)
    throughput, under the chip's roofs (datasheet HBM bandwidth, then the matrix peak of
    each dtype the records use that the matrix unit has; bf16 when none does)."""
    fig, ax = plt.subplots(figsize=(7, 5))
    points = [c for c in comparisons if c.flops > 0 and c.hbm_bytes > 0]
    intensity = [c.flops / c.hbm_bytes for c in points] or [1.0]
    rates = chip.matrix.flops_per_cycle_per_core
    dtypes = sorted({str(c.measurement.params.get("dtype")) for c in points} & set(rates),
                    key=lambda d: (rates[d], d)) or ["bf16"]  # by name where rates tie: not the set's hash order
    for dtype, style in zip(dtypes, ("-", "--", ":", "-.") * len(dtypes)):
        draw_roof(ax, chip, [min(intensity) / 4, max(intensity) * 4], dtype, color="black", linewidth=1,
                  linestyle=style)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, family in enumerate(sorted({c.measurement.family for c in points})):
        items = [c for c in points if c.measurement.family == family]
        xs = [c.flops / c.hbm_bytes for c in items]
        color = colors[i % len(colors)]
        ax.scatter(xs, [c.flops / c.measurement.latency_s for c in items], color=color, s=18, label=f"{family} measured")
        ax.scatter(xs, [c.flops / c.predicted_s for c in items], facecolors="none", edgecolors=color, s=30,
                   label=f"{family} predicted")
    return finish_log_log(fig, ax, path, "arithmetic intensity (flop per HBM byte, simulated)", "flop/s", dpi=110)


def plot_error_by_family(comparisons: Sequence[Comparison], path: Path) -> Path:
    families = sorted({c.measurement.family for c in comparisons})
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, family in enumerate(families):
        errors = [c.error * 100 for c in comparisons if c.measurement.family == family]
        ax.scatter([i] * len(errors), errors, alpha=0.6, s=16)
    return finish_error_plot(fig, ax, path, families)


def finish_error_plot(fig, ax, path: Path, labels: Sequence[str], *, fontsize: float | None = None) -> Path:
    """Error-per-group axes: a +-10% band, the zero line, one tick per group; saved and closed."""
    ax.axhspan(-10, 10, color="grey", alpha=0.2)
    ax.axhline(0, color="black", linewidth=1)
    ax.set_xticks(range(len(labels)), labels, fontsize=fontsize)
    ax.set_ylabel("error, predicted / measured - 1 (%)")
    ax.grid(True, axis="y", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
