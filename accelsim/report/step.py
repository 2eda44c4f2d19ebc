"""The step comparison of ``accelsim validate`` (:mod:`accelsim.validate.step`): a Markdown
report (the step's split into compute, exposed communication and gaps, measured and
replayed; the per-kernel error table by share of the measured time), one Perfetto file
with both timelines (measured and simulated as two processes, a track per stream) and a
plot of the largest kernels."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accelsim.figures import in_default_style  # noqa: E402
from accelsim.files import write_json  # noqa: E402
from accelsim.importers.profile_kernels import short_name  # noqa: E402
from accelsim.validate.step import PARTS, KernelRow, Span, StepComparison  # noqa: E402

STEP_FILES = ("step.md", "step.perfetto.json", "step_kernels.png")
"""What :func:`write_step_report` writes into the report's folder (one measured step)."""
TOP_KERNELS = 12
"""Kernels the plot shows (the largest by measured time)."""
MAX_NAME_CHARS = 60


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f} us"


def _pct(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x * 100:+.1f}%"


def _name(text: str) -> str:
    short = short_name(text)
    return short if len(short) <= MAX_NAME_CHARS else short[:MAX_NAME_CHARS - 3] + "..."


def step_markdown(c: StepComparison, regenerate: str) -> str:
    m, s = c.measured, c.simulated
    diff = {p: s.part(p) - m.part(p) for p in PARTS}
    lines = [f"# Step: {c.name}", "",
             f"Measured on {c.device} (`{c.file}`); replayed on `{c.chip}` from {c.replayed}. Regenerate: "
             f"`{regenerate}`.", "",
             f"The replayed step takes {_us(s.step_s)} against {_us(m.step_s)} measured ({_pct(c.error)}). "
             f"Most of the difference is **{c.dominant}** ({diff[c.dominant] * 1e6:+.1f} us).", "",
             "| part | measured | replayed | difference |", "| --- | ---: | ---: | ---: |"]
    for part in PARTS:
        lines.append(f"| {part} | {_us(m.part(part))} | {_us(s.part(part))} | {diff[part] * 1e6:+.1f} us |")
    lines.append(f"| step | {_us(m.step_s)} | {_us(s.step_s)} | {(s.step_s - m.step_s) * 1e6:+.1f} us |")
    lines += ["", "Compute: time some compute kernel runs; exposed communication: a communication kernel runs and no "
              "compute kernel does; gaps: nothing runs (launch gaps, host waits). "
              f"Of the replayed compute, {_us(s.launch_s)} is the launch overhead `{c.chip}` gives each simulated "
              "kernel (an eager launch that the measurement overlaps with the kernel before it).", ""]
    lines += ["## Kernels by share of the measured time", "",
              "Error = replayed / measured - 1, each kernel's replayed time less its launch overhead. *as measured*: "
              "a kernel without a record (no rule maps it, or its shapes do not give its family's parameters) replays "
              "at its measured time.", "",
              "| kernel | class | impl | record | launches | measured | share | replayed | error |",
              "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in c.rows:
        error = "as measured" if r.replayed_as == "measured" else _pct(r.error)
        lines.append(f"| `{_name(r.name)}` | {r.kernel_class or 'unmapped'} | {r.impl or '-'} | {r.record or '-'} | "
                     f"{r.launches} | {_us(r.measured_s)} | {r.share:.1%} | {_us(r.simulated_s)} | {error} |")
    simulated = [r for r in c.rows if r.replayed_as in ("family", "other trace") and r.simulated_s is not None]
    if simulated:
        measured = sum(r.measured_s for r in simulated)
        replayed = sum(r.simulated_s for r in simulated)
        lines += ["", f"The {sum(r.launches for r in simulated)} simulated kernels ({measured / m.compute_s:.0%} of the "
                  f"measured compute) take {_us(replayed)} against {_us(measured)} measured ({_pct(replayed / measured - 1)})."
                  if m.compute_s else ""]
    lines += ["", "## Files", "", "- `step.perfetto.json`: both timelines, measured and replayed, one process each "
              "(open in https://ui.perfetto.dev).", "- `step_kernels.png`: the largest kernels, measured and replayed.",
              "", "![step kernels](step_kernels.png)"]
    return "\n".join(lines) + "\n"


def step_timeline(c: StepComparison) -> dict[str, Any]:
    """Chrome trace-event JSON: process 1 the measured step, process 2 the replayed one, a
    track per stream; each kernel carries its class, record and error."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": f"measured: {c.device}"}},
        {"ph": "M", "pid": 1, "name": "process_sort_index", "args": {"sort_index": 0}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": f"replayed: {c.chip}"}},
        {"ph": "M", "pid": 2, "name": "process_sort_index", "args": {"sort_index": 1}},
    ]
    own = len(c.simulated_spans) == len(c.pairs)  # the measured step's own trace: one replayed op per kernel
    for pid, spans in ((1, c.measured_spans), (2, c.simulated_spans)):
        origin = min((sp.start_s for sp in spans), default=0.0)
        events += [_span_event(pid, sp, origin, c.pairs[i] if pid == 1 or own else None) for i, sp in enumerate(spans)]
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"step": c.name, "chip": c.chip, "measured_s": c.measured.step_s,
                          "replayed_s": c.simulated.step_s, "dominant": c.dominant}}


def _span_event(pid: int, span: Span, origin: float, pair) -> dict[str, Any]:
    args = {"kernel": span.name}
    if pair is not None:
        args.update({"class": pair.kernel.get("class") or "unmapped", "record": pair.kernel.get("record") or "-",
                     "replayed as": pair.replayed_as})
        if pair.simulated_s is not None and pair.kernel["duration_s"] > 0:
            args["error"] = _pct(pair.simulated_s / pair.kernel["duration_s"] - 1)
    return {"ph": "X", "pid": pid, "tid": span.stream, "name": _name(span.name), "cat": "comm" if span.comm else "compute",
            "ts": (span.start_s - origin) * 1e6, "dur": span.duration_s * 1e6, "args": args}


@in_default_style
def plot_kernels(rows: tuple[KernelRow, ...], path: Path) -> Path:
    """The largest kernels' total time, measured beside replayed."""
    top = list(rows[:TOP_KERNELS])[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(top) + 1.5))
    ys = range(len(top))
    ax.barh([y + 0.2 for y in ys], [r.measured_s * 1e6 for r in top], height=0.4, label="measured")
    ax.barh([y - 0.2 for y in ys], [(r.simulated_s or 0.0) * 1e6 for r in top], height=0.4, label="replayed")
    ax.set_yticks(list(ys), [_name(r.name)[:40] + (" (as measured)" if r.replayed_as == "measured" else "")
                             for r in top], fontsize=7)
    ax.set_xlabel("time in the step (us, all launches)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_step_report(c: StepComparison, out: Path, regenerate: str) -> Path:
    """``step.md``, ``step.perfetto.json`` and ``step_kernels.png`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    report, timeline, plot = (out / name for name in STEP_FILES)
    plot_kernels(c.rows, plot)
    write_json(timeline, step_timeline(c))
    report.write_text(step_markdown(c, regenerate), encoding="utf-8")
    return report
