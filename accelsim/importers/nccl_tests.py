"""nccl-tests output (``all_reduce_perf`` and friends, as printed) as collective records.

A log holds one or more tests, each opened by ``# Collective test starting: X_perf``
(nccl-tests 2.13 and later; for older logs ``--collective`` names it), its ranks listed in
``#  Rank  N Group ...`` lines, then one row per size::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
             1024           256     float     sum      -1    18.72    0.05    0.10      0    18.31    0.06    0.10      0

The out-of-place and in-place times (the 6th and 10th columns; 4th and 8th in logs
without ``redop`` and ``root``) become a record of the form of
``validation/collectives/*.json``, which ``accelsim calibrate --system`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from accelsim.errors import InputError, read_text_file, shown, shown_text
from accelsim.units import MAX_EXACT_BYTES, is_measured_time

PROGRAMS = {"all_reduce_perf": "all-reduce", "all_gather_perf": "all-gather", "reduce_scatter_perf": "reduce-scatter",
            "broadcast_perf": "broadcast", "alltoall_perf": "all-to-all", "sendrecv_perf": "collective-permute"}
"""nccl-tests binaries and the collective each times (``sendrecv_perf``: every rank sends
to the next and receives from the one before, a collective-permute here; reduce, gather,
scatter and hypercube have no counterpart)."""
START = re.compile(r"#\s*Collective test starting:\s*(\S+)")
RANK = re.compile(r"#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)")
TIME_COLUMNS = {13: (5, 9), 11: (3, 7)}
"""Tokens in a result row -> (out-of-place, in-place) time columns."""


def _test(collective: str | None, line: int) -> dict:
    return {"collective": collective, "ranks": set(), "device": "", "rows": [], "line": line}


def read_log(path: str | Path, collective: str | None = None, ranks: int | None = None) -> list[dict]:
    """Every test of one log: ``{collective, ranks, device, rows, line}``, each row
    ``(bytes, out-of-place us, in-place us, type and operation)``."""
    source = str(path)
    tests: list[dict] = []
    current: dict | None = None
    for number, line in enumerate(read_text_file(path, "nccl-tests output").splitlines(), 1):
        text = line.strip()
        start = START.match(text)
        if start:
            program = start[1].rsplit("/", 1)[-1]
            if program not in PROGRAMS:
                raise InputError(f"{program} has no counterpart here; expected one of: {', '.join(PROGRAMS)}",
                                 source=source, field=f"line {number}")
            if collective is not None and collective != PROGRAMS[program]:
                raise InputError(f"the log ran {program} ({PROGRAMS[program]}), not --collective {collective}",
                                 source=source, field=f"line {number}")
            current = _test(PROGRAMS[program], number)
            tests.append(current)
            continue
        rank = RANK.match(text)
        if rank:
            if current is None:
                current = _test(collective, number)
                tests.append(current)
            current["ranks"].add(int(rank[1]))
            current["device"] = current["device"] or rank[2].strip()
            continue
        tokens = text.split()
        if not tokens or text.startswith("#") or not tokens[0].isdigit():
            continue
        columns = TIME_COLUMNS.get(len(tokens))
        if current is None or columns is None:
            raise InputError("expected a result row of nccl-tests (size count type [redop root] time algbw busbw "
                             "#wrong time algbw busbw #wrong) after its '# Using devices' lines", source=source,
                             field=f"line {number}")
        try:
            times = [float(tokens[c]) for c in columns]
        except ValueError:
            raise InputError(f"expected times in columns {columns[0] + 1} and {columns[1] + 1}", source=source,
                             field=f"line {number}") from None
        size = int(tokens[0]) if len(tokens[0]) <= 20 else MAX_EXACT_BYTES + 1  # past 8 PiB, and past int()'s limit
        if size > MAX_EXACT_BYTES or not all(t == 0 or is_measured_time(t * 1e-6) for t in times):  # NaN fails
            raise InputError(f"expected a size up to 8 PiB and times of 0 (not run) or from 0.001 us (about a clock "
                             f"cycle) to a day, got {shown_text(tokens[0])} B, {shown_text(tokens[columns[0]])} and "
                             f"{shown_text(tokens[columns[1]])} us", source=source, field=f"line {number}")
        if size > 0 and all(t > 0 for t in times):
            variant = tokens[2:4] if len(tokens) == 13 else tokens[2:3]  # type and reduction op (nccl-tests -d / -o)
            current["rows"].append((size, *times, "-".join(variant)))
    tests = [t for t in tests if t["rows"]]
    if not tests:
        raise InputError("no nccl-tests results: expected '# Using devices' lines and rows of sizes and times",
                         source=source)
    for test in tests:
        if test["collective"] is None:
            raise InputError("the log does not say which test ran (no '# Collective test starting' line): give "
                             "--collective", source=source, field=f"line {test['line']}")
        test["ranks"] = ranks or len(test["ranks"])
        if test["ranks"] < 2:
            raise InputError("the log lists fewer than 2 ranks (a build without MPI lists every process as rank 0): "
                             "give --ranks", source=source, field=f"line {test['line']}")
    return tests


def records(paths: Sequence[str | Path], system: str, collective: str | None = None, algorithm: str = "auto",
            ranks: int | None = None, most_ranks: int | None = None) -> list[dict]:
    """The collective records of the logs ``paths``, measured on ``system`` (whose
    ``most_ranks`` GPUs bound a test's ranks)."""
    out = []
    for path in paths:
        for k, test in enumerate(read_log(path, collective, ranks)):
            if most_ranks is not None and test["ranks"] > most_ranks:
                raise InputError(f"the test ran over {test['ranks']} ranks, more than {system}'s {most_ranks} GPUs",
                                 source=str(path), field=f"line {test['line']}")
            for size, out_of_place, in_place, variant in test["rows"]:
                out.append({
                    "id": f"{Path(path).stem}-{k}-{test['collective']}-{test['ranks']}r-{size}B-{variant}",
                    "system": system, "collective": test["collective"], "ranks": test["ranks"], "size_bytes": size,
                    "algorithm": algorithm, "time_out_of_place_us": out_of_place, "time_in_place_us": in_place,
                    "source": f"{path} (nccl-tests, {test['ranks']} ranks"
                              + (f" of {test['device']}" if test["device"] else "") + ")",
                    "tool": "nccl-tests",
                })
    seen: set[str] = set()
    for r in out:
        if r["id"] in seen:
            raise InputError(f"two rows give {shown(r['id'])}: logs of one name (rename one), or a test that repeats a "
                             f"size with the same type and operation", source=r["source"].split(" (")[0])
        seen.add(r["id"])
    return out
