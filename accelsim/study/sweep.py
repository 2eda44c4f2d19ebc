"""``accelsim sweep``: run a planned sweep into an output folder, resumably.

The folder gets ``journal.jsonl`` (appended as results arrive), then
``results.csv``, ``plots/`` and ``summary.md`` once every run is done. Running the
same spec into the same folder again runs only what the journal lacks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from accelsim.arch.model import config_files
from accelsim.errors import InputError, shown
from accelsim.files import check_output_dir, write_text_atomic
from accelsim.study.journal import (
    JOURNAL_NAME,
    Row,
    append,
    open_journal,
    read_journal,
    spec_digest,
)
from accelsim.study.plan import SweepPlan
from accelsim.study.runner import Progress, Task, run_processes, run_ray, run_serial
from accelsim.study.summary import summary_markdown
from accelsim.study.table import Record, csv_text, records
from accelsim.study.workloads import files_read


@dataclass(frozen=True)
class SweepOutcome:
    records: list[Record]
    ran: int
    """Runs done by this invocation (the rest came from the journal)."""
    resumed: int
    files: list[str]


def pending_tasks(plan: SweepPlan, done: dict[tuple[int, int], Row]) -> list[Task]:
    tasks = []
    for point in plan.points:
        jobs = tuple(j.index for j in plan.jobs if (point.index, j.index) not in done)
        if jobs:
            tasks.append(Task(point, jobs))
    return tasks


def input_files(plan: SweepPlan) -> list[Path]:
    """The files a sweep reads besides its spec: each workload's kernel or system trace (and
    the kernel traces a system trace names) and every config file of each base (built-in
    ones too, what they extend, and the chip, node or slice a system is built on)."""
    files = [path for job in plan.jobs for path in files_read(job)]
    files += [path for base in plan.spec.spec.bases for path in config_files(base)]
    return files


def execute(plan: SweepPlan, out_dir: Path, *, workers: int = 1, ray: str | None = None,
            fresh: bool = False, progress: bool = True) -> tuple[dict[tuple[int, int], Row], int, int]:
    """Run what the journal in ``out_dir`` lacks; all rows, runs done now, runs resumed."""
    check_output_dir(out_dir, "-o")
    _check_output_names(out_dir)
    journal_path = out_dir / JOURNAL_NAME
    digest = spec_digest(plan.spec.raw, input_files(plan))
    if fresh and journal_path.exists():
        journal_path.unlink()
    done = read_journal(journal_path, digest)
    known = {(point.index, job.index) for point in plan.points for job in plan.jobs}
    stray = sorted(set(done) - known)
    if stray:  # the header matched, so the journal was edited: its rows cannot be trusted
        raise InputError(f"the journal has a row for point {stray[0][0]}, workload {stray[0][1]}, which this sweep "
                         f"does not have ({len(plan.points)} points, {len(plan.jobs)} workloads); give another -o "
                         "folder or --fresh", source=str(journal_path))
    resumed = len(done)
    tasks = pending_tasks(plan, done)
    bar = Progress(len(tasks), enabled=progress)
    ran = 0
    with open_journal(journal_path, digest, done) as journal:
        for rows in _results(plan, tasks, workers, ray):
            append(journal, rows)
            done.update({(r.point, r.workload): r for r in rows})
            ran += len(rows)
            bar.advance()
    bar.close()
    return done, ran, resumed


def _results(plan: SweepPlan, tasks: list[Task], workers: int, ray: str | None) -> Iterator[list[Row]]:
    if ray:
        return run_ray(tasks, plan.jobs, ray)
    if workers <= 1 or len(tasks) <= 1:
        return run_serial(tasks, plan.jobs)
    return run_processes(tasks, plan.jobs, min(workers, len(tasks)))


def write_outputs(plan: SweepPlan, rows: dict[tuple[int, int], Row], out_dir: Path) -> tuple[list[Record], list[str]]:
    from accelsim.study.plots import plot_all  # matplotlib loads only when used
    recs = records(plan, rows)
    _write_text(out_dir / OUTPUT_FILES[0], csv_text(plan, recs))
    spec = plan.spec.spec
    named = spec.plots if spec.plots is not None else [m for m in spec.metrics if m != "utilization.*"]
    plots = plot_all(plan, recs, named, out_dir / PLOTS_FOLDER)
    _write_text(out_dir / OUTPUT_FILES[1], summary_markdown(plan, recs, plots))
    return recs, [OUTPUT_FILES[0], *plots, OUTPUT_FILES[1]]


def run_sweep(plan: SweepPlan, out_dir: str | Path, **options) -> SweepOutcome:
    out_dir = Path(out_dir)
    rows, ran, resumed = execute(plan, out_dir, **options)
    recs, files = write_outputs(plan, rows, out_dir)
    return SweepOutcome(records=recs, ran=ran, resumed=resumed, files=files)


OUTPUT_FILES = ("results.csv", "summary.md")
PLOTS_FOLDER = "plots"


def _check_output_names(out_dir: Path) -> None:
    """Before any run: the files the sweep writes at its end are not folders (nor its plots
    folder a file), so a finished sweep does not stop with half its outputs written."""
    for name in OUTPUT_FILES:
        if (out_dir / name).is_dir():
            raise InputError(f"{shown(str(out_dir / name))} is a folder; the sweep writes its {name} there", field="output")
    plots = out_dir / PLOTS_FOLDER
    if plots.exists() and not plots.is_dir():
        raise InputError(f"{shown(str(plots))} is a file; the sweep writes its plots into a folder there", field="output")


def _write_text(path: Path, text: str) -> None:
    write_text_atomic(path, text)
