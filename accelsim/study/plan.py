"""Everything a sweep will do, checked before any simulation starts.

:func:`plan_sweep` reads the spec, loads every base config, expands and checks the
workloads and the metrics, and applies every point's overrides (validated against the
config schema, as ``--set`` would be; on a system base, the system is resolved, which
checks its size, and every workload is checked against it). A bad spec fails here
with one located line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from accelsim.errors import InputError
from accelsim.study.archs import kind_of, resolve_point, validate_point
from accelsim.study.space import Point, sweep_points, varied_names
from accelsim.study.spec import LoadedSpec, load_sweep_spec
from accelsim.study.workloads import Job, check_job, check_job_on, check_metrics, check_runs, expand_jobs


@dataclass(frozen=True)
class SweepPlan:
    spec: LoadedSpec
    points: list[Point]
    jobs: list[Job]
    varied: list[str]
    """Columns that vary between points: ``arch`` (several bases) and the parameters."""


def plan_sweep(path: str | Path) -> SweepPlan:
    spec = load_sweep_spec(path)
    check_metrics(spec)
    kinds = _base_kinds(spec)
    points = sweep_points(spec)
    check_runs(spec, len(points))
    jobs = expand_jobs(spec)
    for job in jobs:
        check_job(job, spec, kinds)
    _check_points(spec, points, jobs, kinds)
    varied = varied_names(spec)
    _check_plots_and_pareto(spec, varied)
    return SweepPlan(spec=spec, points=points, jobs=jobs, varied=varied)


def _base_kinds(spec: LoadedSpec) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for i, base in enumerate(spec.spec.bases):
        if base in kinds:  # a base listed again (each is a point of the grid) is checked once
            continue
        loc = ("base",) if isinstance(spec.spec.base, str) else ("base", i)
        try:
            resolve_point(base, [])  # a system's size is checked as it is resolved
            kinds[base] = kind_of(base)
        except InputError as exc:
            raise spec.error(exc.one_line(), loc) from None
    return kinds


def _check_points(spec: LoadedSpec, points: list[Point], jobs: list[Job], kinds: dict[str, str]) -> None:
    """Every point's overrides, validated once per distinct (base, overrides). A point on a
    system base is resolved (which refuses a system larger than accelsim models, before
    any of its links are built) and every job is checked against that system."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for point in points:
        key = (point.base, tuple(point.overrides))
        if key in seen:
            continue
        seen.add(key)
        where = f"point {point.index} ({point.base}, {', '.join(point.overrides) or 'no overrides'})"
        on_chip = kinds[point.base] == "chip"
        try:
            arch = (validate_point if on_chip else resolve_point)(point.base, point.overrides)
        except InputError as exc:
            name = _parameter_named(spec, exc.field)
            raise spec.error(f"{where}: {exc.message}", ("parameters", name) if name else ("parameters",)) from None
        if on_chip:
            continue  # what a kernel needs of a chip, only its simulation finds: the run's error
        for job in jobs:
            try:
                check_job_on(job, arch)
            except InputError as exc:
                raise spec.error(f"{where}: {job.failed(exc)}", ("workloads", job.spec_index)) from None


def _parameter_named(spec: LoadedSpec, field: str | None) -> str | None:
    """The parameter a point's error is about: the one setting ``field``, else the only one
    (the bases were checked unchanged, so a point fails by its overrides: a system's size
    says no field)."""
    if len(spec.spec.parameters) == 1:
        return next(iter(spec.spec.parameters))
    if not field:
        return None
    for name in spec.spec.parameters:
        if name == field or name.endswith("." + field):
            return name
    return None


def _check_plots_and_pareto(spec: LoadedSpec, varied: list[str]) -> None:
    for i, name in enumerate(spec.spec.plots or []):
        wildcard = name.startswith("utilization.") and "utilization.*" in spec.spec.metrics
        if name not in spec.spec.metrics and not wildcard:
            raise spec.error(f"{name!r} is not one of the listed metrics: {', '.join(spec.spec.metrics)}", ("plots", i))
    pareto = spec.spec.pareto
    if pareto is None:
        return
    known = set(spec.spec.metrics) | set(varied)
    for axis in ("x", "y"):
        name = getattr(pareto, axis)
        if name not in known:
            raise spec.error(f"{name!r} is neither a listed metric nor a varied parameter; "
                             f"expected one of: {', '.join(sorted(known))}", ("pareto", axis))
