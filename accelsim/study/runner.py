"""Running sweep tasks: in this process, on local worker processes, or on a Ray cluster.

A task is one point with the workloads still to run there; it resolves the point's
config once and runs each workload, catching errors so that one failed workload or
point is recorded and the sweep goes on. Executors yield results as they finish (in
any order); the caller orders them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from typing import TextIO

from accelsim.errors import InputError
from accelsim.study.archs import resolve_point
from accelsim.study.journal import Row
from accelsim.study.space import Point
from accelsim.study.workloads import Job, run_job
from accelsim.workers import worker_pool


@dataclass(frozen=True)
class Task:
    point: Point
    jobs: tuple[int, ...]
    """Indices of the jobs still to run at this point."""


def describe(exc: BaseException) -> str:
    """An error as one line for the results table."""
    if isinstance(exc, InputError):
        return exc.one_line()
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def run_task(task: Task, jobs: Sequence[Job]) -> list[Row]:
    """Run one point's pending jobs; failures become rows with status ``error``."""
    try:
        arch = resolve_point(task.point.base, task.point.overrides)
    except Exception as exc:  # noqa: BLE001 - recorded in the results, the sweep goes on
        return [Row(task.point.index, j, "error", {}, describe(exc)) for j in task.jobs]
    rows = []
    for j in task.jobs:
        try:
            rows.append(Row(task.point.index, j, "ok", run_job(jobs[j], arch)))
        except Exception as exc:  # noqa: BLE001
            rows.append(Row(task.point.index, j, "error", {}, describe(exc)))
    return rows


_WORKER_JOBS: Sequence[Job] = ()


def _init_worker(jobs: Sequence[Job]) -> None:
    global _WORKER_JOBS
    _WORKER_JOBS = jobs


def _worker_task(task: Task) -> list[Row]:
    return run_task(task, _WORKER_JOBS)


def run_serial(tasks: Sequence[Task], jobs: Sequence[Job]) -> Iterator[list[Row]]:
    for task in tasks:
        yield run_task(task, jobs)


def run_processes(tasks: Sequence[Task], jobs: Sequence[Job], workers: int) -> Iterator[list[Row]]:
    """Local worker processes; at most ``2 * workers`` tasks in flight, so a stop loses little."""
    with worker_pool(workers, _init_worker, (tuple(jobs),)) as pool:
        queue = iter(tasks)
        pending = set()
        for task in queue:
            pending.add(pool.submit(_worker_task, task))
            if len(pending) >= 2 * workers:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                task = next(queue, None)
                if task is not None:
                    pending.add(pool.submit(_worker_task, task))


def require_ray():
    """The ``ray`` module, or one line of bad input saying how to install it."""
    try:
        import ray
    except ModuleNotFoundError:
        raise InputError("Ray is not installed: pip install -e '.[ray]'", field="ray") from None
    return ray


def run_ray(tasks: Sequence[Task], jobs: Sequence[Job], address: str) -> Iterator[list[Row]]:
    """The same tasks as Ray remote functions. ``address``: ``auto`` (a running cluster),
    ``local`` (start one on this machine) or a cluster address."""
    ray = require_ray()
    ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
             include_dashboard=False, log_to_driver=False)
    remote = ray.remote(run_task)
    jobs_ref = ray.put(tuple(jobs))
    pending = {remote.remote(task, jobs_ref): task for task in tasks}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            pending.pop(ref)
            yield ray.get(ref)


class Progress:
    """A one-line progress bar on a terminal (rich if installed), a line per 10% otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        stream = sys.stderr if stream is None else stream  # the stderr of now, not of when this module loaded
        self.total, self.done, self.stream, self.enabled = total, 0, stream, enabled and total > 0
        self.started = time.perf_counter()
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self._rich = None
        self._last_decile = -1
        if self.enabled and self.tty:
            try:
                from rich.progress import Progress as RichProgress
            except ModuleNotFoundError:
                pass
            else:
                self._rich = RichProgress(transient=True)
                self._rich.start()
                self._task = self._rich.add_task("sweep", total=total)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done)
            return
        elapsed = time.perf_counter() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        line = f"{self.done}/{self.total} points, {rate:.1f} points/s"
        if self.tty:
            filled = int(30 * self.done / self.total)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {line}")
            self.stream.flush()
        elif self.done * 10 // self.total != self._last_decile:
            self._last_decile = self.done * 10 // self.total
            print(line, file=self.stream)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
        elif self.enabled and self.tty:
            self.stream.write("\n")
