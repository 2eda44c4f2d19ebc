"""The sweep journal: one JSON line per finished (point, workload), appended as results
arrive, so that a sweep that is stopped resumes where it stopped and loses nothing.

The first line is a header naming the spec it belongs to (a hash of the spec's
contents and of the files it names: traces, config files) and the model that ran it (a
hash of accelsim's own code); a journal of another spec, of the same spec over files that
have changed since, or of another version of the model, is refused rather than mixed in.
A last line cut short by a kill is dropped on resume; any other damage (a line that is
not a row, a metric of the wrong type) is refused with the line.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from accelsim.errors import InputError
from accelsim.study.workloads import FLAG_METRICS, TEXT_METRICS

JOURNAL_VERSION = 1
JOURNAL_NAME = "journal.jsonl"
DAMAGED = "the journal was edited or damaged: give another -o folder or --fresh"


@dataclass(frozen=True)
class Row:
    """One finished (point, workload): ``status`` is ``ok`` or ``error``."""

    point: int
    workload: int
    status: str
    metrics: dict[str, Any]
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps({"point": self.point, "workload": self.workload, "status": self.status,
                           "error": self.error, "metrics": self.metrics}, separators=(",", ":"))


def spec_digest(raw_spec: dict[str, Any], files: Sequence[Path] = ()) -> str:
    """The spec's contents and, when it names files, theirs (a file that is missing counts
    as such): a regenerated trace makes the old results another sweep's. Only contents
    count, not where the files are: the same sweep run from another folder, with the spec
    named another way or accelsim installed elsewhere, resumes its journal."""
    digest = hashlib.sha256(json.dumps(raw_spec, sort_keys=True, default=str).encode())
    if not files:
        return digest.hexdigest()
    found = sorted({hashlib.sha256(Path(f).read_bytes() if Path(f).is_file() else b"<missing>").digest()
                    for f in map(str, files)})
    for file_digest in found:
        digest.update(b"\n" + file_digest)
    return digest.hexdigest()


@functools.cache
def model_digest() -> str:
    """accelsim's own code: every ``.py`` file of the package, by path within it and contents
    (not where it is installed). Results that one version of the model gave are not resumed
    by another."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read_journal(path: Path, digest: str) -> dict[tuple[int, int], Row]:
    """Rows already done, keyed by (point, workload); empty if there is no journal."""
    if path.exists() and not path.is_file():
        raise InputError("expected the sweep's journal file here, found a folder or device; give another -o folder",
                         source=str(path))
    if not path.is_file():
        return {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the sweep's journal: {exc}; give another -o folder or --fresh",
                         source=str(path)) from None
    if not lines:
        return {}
    try:
        header = json.loads(lines[0])
    except (json.JSONDecodeError, RecursionError):
        header = {}
    if not isinstance(header, dict) or header.get("spec_sha256") != digest:
        raise InputError("this folder holds results of a different sweep spec, or of files it names that have "
                         "changed since (traces, configs); give another -o folder or --fresh", source=str(path))
    if header.get("model_sha256") != model_digest():
        raise InputError("this folder holds results of this sweep from another version of accelsim (its model's "
                         "code has changed since they were run); give another -o folder or --fresh", source=str(path))
    rows: dict[tuple[int, int], Row] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if number == len(lines):
                continue  # the last line cut short when the sweep was stopped: that result is run again
            item = None  # a damaged line before the last: not a stop's doing
        row = _row(item)
        if row is None:
            raise InputError(f"not a journal row (point, workload, status, metrics); {DAMAGED}",
                             source=str(path), line=number)
        wrong = _wrong_metric(row.metrics)
        if wrong:
            raise InputError(f"{wrong}; {DAMAGED}", source=str(path), line=number)
        rows[(row.point, row.workload)] = row
    return rows


def _row(item: Any) -> Row | None:
    """A journal line as a :class:`Row`, or None when it is not one."""
    if not isinstance(item, dict):
        return None
    point, workload, status, metrics = (item.get(k) for k in ("point", "workload", "status", "metrics"))
    error = item.get("error")
    if (not all(isinstance(v, int) and not isinstance(v, bool) for v in (point, workload))
            or status not in ("ok", "error") or not isinstance(metrics, dict)
            or not (error is None or isinstance(error, str))):
        return None
    return Row(point, workload, status, metrics, error)


def _wrong_metric(metrics: dict[str, Any]) -> str | None:
    """What is wrong with the first metric whose value is not of its type
    (:data:`~accelsim.study.workloads.TEXT_METRICS`, ``FLAG_METRICS``, else a number or null)."""
    for name, value in metrics.items():
        if name in TEXT_METRICS:
            expected, ok = "text", isinstance(value, str)
        elif name in FLAG_METRICS:
            expected, ok = "true or false", isinstance(value, bool)
        else:
            expected = "a number"
            ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
        if not ok:
            return f"metric {name!r} is {json.dumps(value)}, expected {expected}"
    return None


def open_journal(path: Path, digest: str, done: dict[tuple[int, int], Row]) -> TextIO:
    """Open for appending; a fresh journal (or one whose last line was cut) is rewritten first."""
    complete = path.is_file() and path.read_text(encoding="utf-8").endswith("\n")
    if not done or not complete:
        with path.open("w", encoding="utf-8") as f:
            f.write(json.dumps({"journal": JOURNAL_VERSION, "spec_sha256": digest,
                                "model_sha256": model_digest()}) + "\n")
            for key in sorted(done):
                f.write(done[key].to_json() + "\n")
    return path.open("a", encoding="utf-8")


def append(journal: TextIO, rows: list[Row]) -> None:
    journal.write("".join(row.to_json() + "\n" for row in rows))
    journal.flush()
