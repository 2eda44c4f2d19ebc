"""The sweep journal: one JSON line per finished (point, workload), appended as results
arrive, so that a sweep that is stopped resumes where it stopped and loses nothing.

The first line is a header naming the spec it belongs to (a hash of the spec's
contents); a journal of another spec is refused rather than mixed in. A last line cut
short by a kill is dropped on resume.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from accelsim.errors import InputError

JOURNAL_VERSION = 1
JOURNAL_NAME = "journal.jsonl"


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


def spec_digest(raw_spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(raw_spec, sort_keys=True, default=str).encode()).hexdigest()


def read_journal(path: Path, digest: str) -> dict[tuple[int, int], Row]:
    """Rows already done, keyed by (point, workload); empty if there is no journal."""
    if not path.is_file():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        return {}
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = {}
    if header.get("spec_sha256") != digest:
        raise InputError("this folder holds results of a different sweep spec; give another -o folder or --fresh",
                         source=str(path))
    rows: dict[tuple[int, int], Row] = {}
    for line in lines[1:]:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the sweep was stopped: that result is run again
        row = Row(item["point"], item["workload"], item["status"], item["metrics"], item.get("error"))
        rows[(row.point, row.workload)] = row
    return rows


def open_journal(path: Path, digest: str, done: dict[tuple[int, int], Row]) -> TextIO:
    """Open for appending; a fresh journal (or one whose last line was cut) is rewritten first."""
    complete = path.is_file() and path.read_text(encoding="utf-8").endswith("\n")
    if not done or not complete:
        with path.open("w", encoding="utf-8") as f:
            f.write(json.dumps({"journal": JOURNAL_VERSION, "spec_sha256": digest}) + "\n")
            for key in sorted(done):
                f.write(done[key].to_json() + "\n")
    return path.open("a", encoding="utf-8")


def append(journal: TextIO, rows: list[Row]) -> None:
    journal.write("".join(row.to_json() + "\n" for row in rows))
    journal.flush()
