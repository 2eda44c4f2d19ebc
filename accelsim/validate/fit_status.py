"""Whether a fit touched a record, for the config it is predicted with.

Honest accuracy is on records no fit touched. A record is

* ``fitted``: a value of the config was fitted on it (its file is among those a fitted
  value's source names, and the fit's split kept it for training);
* ``held-out``: its file was fitted on, but the fit's split held it out;
* ``derived``: a published value of its chip was derived from it (the record says so in
  ``informs``: the H200 STREAM ``init`` record set that chip's HBM efficiency);
* ``never fitted``: none of these.

Which files a fit used is read from the sources ``accelsim calibrate`` writes beside each
fitted value ("accelsim calibrate on 92 training records (validation/.../elementwise.json);
..."). A record of such a file that the fit's ``--exclude`` left out still counts as
fitted: when in doubt, a record is kept out of the never-fitted set. So does a record of
another file that is the same measurement as one fitted on (same source, family,
parameters and latency: the public STREAM records at full occupancy are rows of the
occupancy sweeps ``h200-sxm-calibrated`` was fitted on).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelsim.arch.loader import load_raw
from accelsim.validate.calibrate import holds_out
from accelsim.validate.compare import Measurement, read_measurements
from accelsim.validate.grouping import source_key

STATUSES = ("never fitted", "held-out", "fitted", "derived")
"""In the order reports list them: the honest numbers first."""
FITTED_FILE = re.compile(r"[^\s,;()']+\.json")


@dataclass(frozen=True)
class FitRecord:
    """What a config's fitted values were fitted on: measurement files (repository paths),
    the split that held records out, and the records of those files (``fitted_on``, those
    that could be read) by :func:`measurement_key`."""

    files: frozenset[str]
    split: str = "record"
    fitted_on: tuple[Measurement, ...] = ()

    def status(self, m: Measurement) -> str:
        if m.informs:
            return "derived"
        if any(_same_file(m.file, f) for f in self.files):
            return "held-out" if holds_out(m, self.split) else "fitted"
        twins = [t for t in self.fitted_on if measurement_key(t) == measurement_key(m)]
        if twins:
            return "held-out" if all(holds_out(t, self.split) for t in twins) else "fitted"
        return "never fitted"


def fit_record(arch: str) -> FitRecord:
    """The files the fitted values of ``arch`` (and every config it extends) name, their
    split, and the records of those of them found (paths relative to the working folder)."""
    sources = [leaf.get("source", "") for leaf in _fitted_leaves(load_raw(arch).data)]
    files = frozenset(f for text in sources for f in FITTED_FILE.findall(" ".join(str(text).split())))
    split = "kernel" if any("(--split-by kernel)" in str(text) for text in sources) else "record"
    found = sorted(f for f in files if Path(f).is_file())
    return FitRecord(files, split, tuple(read_measurements(found)) if found else ())


def measurement_key(m: Measurement) -> tuple:
    """One measurement, whichever file holds it: its source, family, parameters and latency."""
    return source_key(m), m.family, json.dumps(m.params, sort_keys=True), float(f"{m.latency_s:.9g}")


def _fitted_leaves(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        if node.get("basis") == "fitted":
            yield node
        for value in node.values():
            yield from _fitted_leaves(value)
    elif isinstance(node, list):
        for value in node:
            yield from _fitted_leaves(value)


def _same_file(record_file: str, fitted: str) -> bool:
    """A record's file (as given on the command line) is the file ``fitted`` names (a
    repository path, or any path calibrate was given)."""
    mine = Path(record_file).resolve()
    return mine == Path(fitted).resolve() or mine.as_posix().endswith("/" + fitted.lstrip("/"))
