#!/usr/bin/env python3
"""Write the headline tables of docs/accuracy.md from the committed validation reports.

    python validation/accuracy_headline.py            # rewrite the tables between the markers
    python validation/accuracy_headline.py --check    # exit 1 if docs/accuracy.md is out of date

Reads every ``records.json`` under ``validation/reports/`` (``accelsim validate`` writes one
beside each report: every record's comparison and its status on the config) and writes, between
``<!-- headline:begin -->`` and ``<!-- headline:end -->``:

1. **never fitted**: records predicted with a chip's *published* config (no ``--set``, no
   calibrated overlay) whose status is ``never fitted`` (no fit used them, no published value
   was derived from them), by family, by implementation and by source. One measurement counts
   once, however many reports hold it (the STREAM rows at full occupancy are in two files).
2. **fitted and held-out**: records predicted with a calibrated config or with ``--set``
   values, by config, status and family, labelled so.

Every number comes with its record count and sources. ``tests/validation/test_accuracy_headline.py``
checks that the committed docs match what this writes from the committed reports.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "validation" / "reports"
DOC = ROOT / "docs" / "accuracy.md"
BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"
WITHIN = 0.10
"""The share of records within this error is a column of its own."""


def read_reports(folder: Path = REPORTS) -> list[tuple[str, dict]]:
    """Every ``records.json`` under ``folder`` (as ``validate`` writes it), by its folder, in path order."""
    out = []
    for path in sorted(folder.rglob("records.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") == "validation-records":
            out.append((path.parent.relative_to(folder).as_posix(), data))
    return out


def published(data: dict) -> bool:
    """A report of a chip's published config as it stands."""
    return not data["overrides"] and all(r["measured_on"] == data["config"] for r in data["records"])


def never_fitted(reports: Sequence[tuple[str, dict]]) -> list[dict]:
    """The never-fitted records of published-config reports, each measurement once: a record
    that another report holds too (the same source, implementation and time) counts there
    only; two records of one report are two measurements, whatever their times."""
    seen: dict[tuple, str] = {}
    out = []
    for folder, data in reports:
        if not published(data):
            continue
        for r in data["records"]:
            key = (r["measured_on"], r["source"], r["family"], r["implementation"], r["measured_s"])
            if r["status"] == "never fitted" and seen.setdefault(key, folder) == folder:
                out.append(r)
    return out


def render(reports: Sequence[tuple[str, dict]]) -> str:
    honest = never_fitted(reports)
    lines = [f"On **{len(honest)} records no fit touched** (published configs; written by "
             "`python validation/accuracy_headline.py` from the reports' `records.json`). Error = predicted / "
             f"measured - 1; MAPE = mean |error|; \"within 10%\": the share of records with |error| <= {WITHIN:.0%}.",
             "", "#### Never fitted, all together", ""]
    lines += _table(honest, ("records of",), lambda r: ("all chips",), "chips",
                    lambda rs: f"{len(set(r['measured_on'] for r in rs))} chips")
    lines += _table(honest, ("records of",), lambda r: (f"{_kind(r['measured_on'])} chips",), "chips",
                    lambda rs: _names(r["measured_on"] for r in rs))[2:]
    lines += ["", "#### Never fitted, by chip and family", ""]
    lines += _table(honest, ("chip", "family"), lambda r: (r["measured_on"], r["family"]), "sources",
                    lambda rs: _names(r["source"] for r in rs))
    lines += ["", "#### Never fitted, by implementation", ""]
    lines += _table(honest, ("family", "implementation"), lambda r: (r["family"], r["implementation"]),
                    "chips; sources", lambda rs: f"{_names(r['measured_on'] for r in rs)}; {_names(r['source'] for r in rs)}")
    lines += ["", "#### Never fitted, by source", ""]
    lines += _table(honest, ("source",), lambda r: (r["source"],), "chips; families",
                    lambda rs: f"{_names(r['measured_on'] for r in rs)}; {_names(r['family'] for r in rs)}")
    touched = [(folder, data, r) for folder, data in reports if not published(data) for r in data["records"]]
    lines += ["", "#### Fitted and held-out (calibrated configs, or values carried with `--set`)", "",
              "Not headline numbers: *fitted* records were fitted on; *held-out* ones are of a file a fit used, "
              "held out by its split; *never fitted* here means predicted with values fitted on other records.", ""]
    lines += _table([{**r, "report": f"{folder}"} for folder, _, r in touched], ("report", "status", "family"),
                    lambda r: (r["report"], r["status"], r["family"]), "sources",
                    lambda rs: _names(r["source"] for r in rs))
    return "\n".join(lines)


def _table(records: Sequence[dict], columns: tuple[str, ...], key: Callable[[dict], tuple], extra: str,
           describe: Callable[[list[dict]], str]) -> list[str]:
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    lines = [f"| {' | '.join(columns)} | records | MAPE | median abs | within 10% | mean signed | {extra} |",
             f"| {' | '.join('---' for _ in columns)} | ---: | ---: | ---: | ---: | ---: | --- |"]
    for group in sorted(groups):
        rs = groups[group]
        errors = [abs(r["error"]) for r in rs]
        lines.append(f"| {' | '.join(group)} | {len(rs)} | {statistics.fmean(errors):.1%} | "
                     f"{statistics.median(errors):.1%} | {sum(e <= WITHIN for e in errors) / len(rs):.0%} | "
                     f"{statistics.fmean(r['error'] for r in rs) * 100:+.1f}% | {describe(rs)} |")
    return lines


def _kind(chip: str) -> str:
    """GPU or TPU, by the chip's config name (every TPU config is named ``tpu-...``)."""
    return "TPU" if chip.startswith("tpu") else "GPU"


def _names(values: Iterable[str]) -> str:
    return ", ".join(sorted(set(values)))


def with_headline(text: str, table: str) -> str:
    """``text`` with what lies between the markers replaced by ``table``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"expected one {BEGIN} before one {END}")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/accuracy.md is out of date")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    try:
        updated = with_headline(text, render(read_reports()))
    except ValueError as exc:
        print(f"accuracy_headline.py: error: {DOC}: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if updated != text:
            print(f"{DOC} is out of date: run python validation/accuracy_headline.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(updated, encoding="utf-8")
    print(f"wrote the headline tables of {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
