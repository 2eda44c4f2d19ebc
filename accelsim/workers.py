"""Local worker processes: a pool that runs a function over items in order, started
the way that is safe for the libraries this process has loaded. Sweeps, config searches,
validation and calibration share it."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager


THREADED_MODULES = ("jax", "torch", "triton")
"""Libraries that start threads of their own (capture loads them). Forking a process that
runs threads can deadlock the child, so with one of them loaded, workers start from a
clean server process instead (slower to start: each imports accelsim afresh)."""


MAX_WORKERS = 1024
"""The most local worker processes a command may ask for (``--jobs``, ``--workers``)."""


def worker_pool(workers: int, initializer, initargs: tuple) -> ProcessPoolExecutor:
    """Local worker processes, each set up once by ``initializer(*initargs)``."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=worker_context(), initializer=initializer,
                               initargs=initargs)


@contextmanager
def mapped(fn, items: Sequence, workers: int, initializer, initargs: tuple) -> Iterator:
    """``fn`` over ``items``, in order: in ``workers`` processes (each set up by
    ``initializer(*initargs)``) when more than one worker and item, else here, lazily."""
    if workers > 1 and len(items) > 1:  # no more processes than items (a fork pool starts them all at once)
        with worker_pool(min(workers, len(items)), initializer, initargs) as pool:
            yield pool.map(fn, items)
    else:
        initializer(*initargs)
        yield map(fn, items)


def worker_context() -> multiprocessing.context.BaseContext:
    """How to start worker processes: fork, or a fork server once a threaded library is loaded."""
    threaded = any(name in sys.modules for name in THREADED_MODULES)
    if threaded and "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context()


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
