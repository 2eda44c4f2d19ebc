"""The results table: one row per (point, workload), in point order then workload order,
with every varied parameter, the workload's variables, every metric, status and error.

Varied parameters that are quantities are given in SI base units (``hbm.bandwidth``
``4e12`` for "4 TB/s"); other values as written (``256x256`` for a list).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accelsim.study.journal import Row
from accelsim.study.plan import SweepPlan
from accelsim.study.space import ARCH, ParamValue, Point


@dataclass(frozen=True)
class Record:
    """One row of the table with its point and job, for summaries and plots."""

    point: Point
    job_index: int
    workload: str
    variables: dict[str, Any]
    status: str
    metrics: dict[str, Any]
    error: str | None

    def param(self, name: str) -> ParamValue:
        return self.point.value(name)

    def number(self, name: str) -> float | None:
        """A metric or a varied parameter as a number (None if it is not one)."""
        if name in self.metrics:
            value = self.metrics[name]
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if name in self.variables:
            value = self.variables[name]
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if name == ARCH or any(name == n for n, _ in self.point.values):
            return self.param(name).number
        return None  # a metric this workload does not produce


def records(plan: SweepPlan, rows: dict[tuple[int, int], Row]) -> list[Record]:
    out = []
    for point in plan.points:
        for job in plan.jobs:
            row = rows.get((point.index, job.index))
            if row is None:
                continue
            out.append(Record(point, job.index, job.name, dict(job.variables), row.status, row.metrics, row.error))
    return out


def metric_columns(plan: SweepPlan, recs: Sequence[Record]) -> list[str]:
    """The spec's metrics with ``utilization.*`` expanded; ``bound`` always included."""
    seen_util = sorted({k for r in recs for k in r.metrics if k.startswith("utilization.")})
    columns: list[str] = []
    for name in plan.spec.spec.metrics:
        columns.extend(seen_util if name == "utilization.*" else [name])
    if "bound" not in columns:
        columns.insert(1 if columns and columns[0] == "latency_s" else 0, "bound")
    return list(dict.fromkeys(columns))


def variable_columns(plan: SweepPlan) -> list[str]:
    return list(dict.fromkeys(name for job in plan.jobs for name, _ in job.variables))


def columns(plan: SweepPlan, recs: Sequence[Record]) -> list[str]:
    return ["point", *plan.varied, "workload", *variable_columns(plan), *metric_columns(plan, recs), "status", "error"]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.9g}"
    return str(value)


def _param_cell(value: ParamValue) -> str:
    return _cell(value.number) if value.number is not None else value.label


def csv_text(plan: SweepPlan, recs: Sequence[Record]) -> str:
    cols = columns(plan, recs)
    variables = variable_columns(plan)
    metrics = metric_columns(plan, recs)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(cols)
    for r in recs:
        writer.writerow([
            r.point.index, *(_param_cell(r.param(n)) for n in plan.varied), r.workload,
            *(_cell(r.variables.get(n)) for n in variables), *(_cell(r.metrics.get(m)) for m in metrics),
            r.status, r.error or "",
        ])
    return buffer.getvalue()
