"""What a sweep found, in words: where each workload's bottleneck moves along each
varied parameter, the best point per workload, the Pareto front, what did not fit in
HBM and what failed.

Bottleneck moves come from the ``bound`` of each run. On a grid, the points of one
workload that differ only in parameter ``p`` form a line; walking it in order of
``p``, every change of ``bound`` is a move ("hbm -> matrix_unit between 4 TB/s and
6 TB/s"). Lines with the same moves are reported together with the settings of the
other parameters they hold for. With random sampling no such lines exist; the
summary gives the range of ``p`` over which each bound was seen instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from accelsim.study.plan import SweepPlan
from accelsim.study.table import Record
from accelsim.units import format_quantity

MAX_SETTINGS_LISTED = 4


@dataclass(frozen=True)
class Move:
    """``bound`` changes from ``before`` to ``after`` between two neighbouring values of a parameter."""

    before: str
    after: str
    low: str
    high: str


def moves_along(line: Sequence[Record], param: str) -> list[Move]:
    """Bound changes along ``line`` (runs of one workload, ordered by ``param``)."""
    moves = []
    for a, b in pairwise(line):
        if a.metrics.get("bound") != b.metrics.get("bound"):
            moves.append(Move(str(a.metrics.get("bound")), str(b.metrics.get("bound")),
                              a.param(param).label, b.param(param).label))
    return moves


def _describe(moves: Sequence[Move], line: Sequence[Record], param: str) -> str:
    if not moves:
        return f"{line[0].metrics.get('bound')}-bound throughout"
    parts = [f"{line[0].metrics.get('bound')}-bound at {param} = {line[0].param(param).label}"]
    for m in moves:
        parts.append(f"turns {m.after}-bound between {m.low} and {m.high}")
    return "; ".join(parts)


def _key(r: Record, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(r.param(n).label for n in names)


def _order(r: Record, param: str) -> tuple:
    number = r.param(param).number
    return (0, number, 0) if number is not None else (1, 0.0, r.point.index)  # values without a number: spec order


def grid_moves(plan: SweepPlan, recs: Sequence[Record]) -> list[str]:
    """One bullet per (workload, parameter) where the bound moves somewhere on the grid."""
    ok = [r for r in recs if r.status == "ok" and "bound" in r.metrics]
    lines = []
    for job in plan.jobs:
        runs = [r for r in ok if r.job_index == job.index]
        for param in plan.varied:
            others = [n for n in plan.varied if n != param]
            groups: dict[tuple[str, ...], list[Record]] = defaultdict(list)
            for r in runs:
                groups[_key(r, others)].append(r)
            texts: dict[str, list[tuple[str, ...]]] = defaultdict(list)
            any_move = False
            for setting, members in groups.items():
                line = sorted(members, key=lambda r: _order(r, param))
                if len(line) < 2:
                    continue
                moves = moves_along(line, param)
                any_move = any_move or bool(moves)
                texts[_describe(moves, line, param)].append(setting)
            if not any_move:
                continue
            for text, settings in texts.items():
                if text.endswith("throughout"):
                    continue  # settings where it does not move: implied by those where it does
                lines.append(f"- **{job.name}** along `{param}`: {text}{_settings(others, settings, len(groups))}")
    return lines


def _settings(names: Sequence[str], settings: Sequence[tuple[str, ...]], total: int) -> str:
    if not names:
        return ""
    if len(settings) == total:
        return " (at every setting of " + ", ".join(f"`{n}`" for n in names) + ")"
    shown = [", ".join(f"{n}={v}" for n, v in zip(names, s)) for s in settings[:MAX_SETTINGS_LISTED]]
    more = f"; and {len(settings) - MAX_SETTINGS_LISTED} more" if len(settings) > MAX_SETTINGS_LISTED else ""
    return " (with " + "; ".join(shown) + more + ")"


def random_moves(plan: SweepPlan, recs: Sequence[Record]) -> list[str]:
    """Per workload and numeric parameter: the range of the parameter over which each bound was seen."""
    lines = []
    for job in plan.jobs:
        runs = [r for r in recs if r.job_index == job.index and r.status == "ok" and "bound" in r.metrics]
        bounds = sorted({str(r.metrics["bound"]) for r in runs})
        if len(bounds) < 2:
            continue
        for param in plan.varied:
            spans = []
            for bound in bounds:
                values = sorted(r.param(param).number for r in runs
                                if str(r.metrics["bound"]) == bound and r.param(param).number is not None)
                if values:
                    spans.append((values[0], values[-1], bound, len(values)))
            if len(spans) < 2:
                continue
            spans.sort()
            unit_of = {r.param(param).number: r.param(param).label for r in runs}
            text = ", ".join(f"{b} at {unit_of[lo]} .. {unit_of[hi]} ({n} points)" for lo, hi, b, n in spans)
            separated = all(a[1] < b[0] for a, b in pairwise(spans))
            turn = ""
            if separated:
                turn = "; " + "; ".join(f"turns {b[2]}-bound above {unit_of[a[1]]}" for a, b in pairwise(spans))
            lines.append(f"- **{job.name}** along `{param}`: {text}{turn}")
    return lines


def pareto_front(points: Sequence[tuple[float, float, Record]], x_goal: str, y_goal: str) -> list[tuple[float, float, Record]]:
    """The non-dominated points, ordered by x."""
    sx = 1.0 if x_goal == "min" else -1.0
    sy = 1.0 if y_goal == "min" else -1.0
    ordered = sorted(points, key=lambda p: (sx * p[0], sy * p[1], p[2].point.index))
    front, best_y = [], None
    for p in ordered:
        if best_y is None or sy * p[1] < best_y:
            front.append(p)
            best_y = sy * p[1]
    return front


def pareto_points(plan: SweepPlan, recs: Sequence[Record], job_index: int) -> list[tuple[float, float, Record]]:
    """(x, y, record) of the job's runs that finished and fit the chip's memory (a run that
    does not fit is no candidate, in the summary as in the plot)."""
    pareto = plan.spec.spec.pareto
    assert pareto is not None
    out = []
    for r in recs:
        if r.job_index != job_index or r.status != "ok" or not r.metrics.get("fits", True):
            continue
        x, y = r.number(pareto.x), r.number(pareto.y)
        if x is not None and y is not None:
            out.append((x, y, r))
    return out


def _point_label(plan: SweepPlan, r: Record) -> str:
    return ", ".join(f"{n}={r.param(n).label}" for n in plan.varied) or "base"


def _seconds(value: float) -> str:
    return format_quantity(value, "seconds")


def summary_markdown(plan: SweepPlan, recs: Sequence[Record], plots: Sequence[str] = ()) -> str:
    s = plan.spec.spec
    failed = [r for r in recs if r.status != "ok"]
    out = [f"# Sweep: {s.name or plan.spec.path.stem}", ""]
    if s.description:
        out += [s.description.strip(), ""]
    sampling = "grid" if s.sampling == "grid" else f"random ({s.sampling.random.samples} samples, seed {s.sampling.random.seed})"
    out += [
        f"- base: {', '.join(s.bases)}",
        f"- varied: {', '.join(f'`{n}`' for n in plan.varied) or 'nothing'} ({sampling})",
        (f"- {len(plan.points)} points x {len(plan.jobs)} workloads = {len(plan.points) * len(plan.jobs)} runs: "
         f"{len(recs) - len(failed)} ok, {len(failed)} failed"),
        "",
        "## Where the bottleneck moves",
        "",
    ]
    moves = grid_moves(plan, recs) if s.sampling == "grid" else random_moves(plan, recs)
    out += moves or ["The bound of every workload is the same at every point."]
    out += ["", "## Fastest point per workload", "", "| workload | latency | bound | point |", "|---|---|---|---|"]
    for job in plan.jobs:
        runs = [r for r in recs if r.job_index == job.index and r.status == "ok" and r.metrics.get("fits", True)
                and isinstance(r.metrics.get("latency_s"), (int, float))]
        if runs:
            best = min(runs, key=lambda r: (r.metrics["latency_s"], r.point.index))
            out.append(f"| {job.name} | {_seconds(best.metrics['latency_s'])} | {best.metrics.get('bound')} | "
                       f"{_point_label(plan, best)} |")
    out += _capacity_section(plan, recs)
    if s.pareto is not None:
        out += ["", f"## Pareto front: {s.pareto.x} ({s.pareto.x_goal}) vs {s.pareto.y} ({s.pareto.y_goal})", ""]
        for job in plan.jobs:
            front = pareto_front(pareto_points(plan, recs, job.index), s.pareto.x_goal, s.pareto.y_goal)
            if front:
                out.append(f"- **{job.name}**: " + "; ".join(_point_label(plan, r) for _, _, r in front))
    if failed:
        out += ["", "## Failed runs", ""]
        out += [f"- point {r.point.index} ({_point_label(plan, r)}), {r.workload}: {r.error}" for r in failed[:20]]
        if len(failed) > 20:
            out.append(f"- ... and {len(failed) - 20} more (see results.csv)")
    if plots:
        out += ["", "## Plots", ""] + [f"- [{p}]({p})" for p in plots]
    return "\n".join(out) + "\n"


def _capacity_section(plan: SweepPlan, recs: Sequence[Record]) -> list[str]:
    """For workloads with a memory footprint: by HBM capacity, the largest value of each
    footprint variable (e.g. batch) that fits, and the smallest that does not."""
    sized = [r for r in recs if r.status == "ok" and "fits" in r.metrics]
    if not sized:
        return []
    out = ["", "## HBM capacity", "",
           "Runs whose memory footprint exceeds HBM are left out of the fastest-point table, the Pareto front "
           "and the plots.", "",
           "| workload | HBM capacity | variable | largest that fits | smallest that does not |", "|---|---|---|---|---|"]
    jobs = {j.index: j for j in plan.jobs}
    groups: dict[tuple[int, float], list[Record]] = defaultdict(list)
    for r in sized:
        groups[(jobs[r.job_index].spec_index, r.metrics["hbm_capacity_bytes"])].append(r)
    for (spec_index, capacity), members in sorted(groups.items()):
        job = jobs[members[0].job_index]
        name = plan.spec.workloads[spec_index].name or job.kind
        per = sorted({n for _, names in job.memory_terms for n in names})
        for var in per:
            fitting = [r.variables[var] for r in members if r.metrics["fits"]]
            failing = [r.variables[var] for r in members if not r.metrics["fits"]]
            out.append(f"| {name} | {format_quantity(capacity, 'bytes')} | {var} | "
                       f"{max(fitting) if fitting else 'none'} | {min(failing) if failing else '-'} |")
    return out
