"""Multi-node collectives against published measurements.

    python validation/report_multinode.py [--out validation/reports/multinode]
    python validation/report_multinode.py --fit-fabric gcp-a3-mega   # print the fitted fabric latency

Every record of ``validation/collectives/multinode.json`` (nccl-tests tables, a
torch.distributed benchmark and maintainer / user statements on 2 to 128 nodes of
H100, A100, B200 and GB200 NVL72 racks, each with its source) is simulated on its
system as published, made the measured machine by the record's ``overrides`` (node
count; GB200 racks as nodes of ``gb200-nvl72``), with the algorithm NCCL ran when the
source forces one and ``auto`` otherwise, plus the per-call overhead of the tool that
timed it (torch.distributed's, ``accelsim.validate.collectives.TOOL_CALL_OVERHEAD_S``).
Writes ``report.md``: per record and per source, measured and predicted bus bandwidth
and the error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import BUS_FACTORS
from accelsim.validate.collectives import tool_overhead_s, with_added_latency

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "validation" / "collectives" / "multinode.json"
GIB, MIB = 2**30, 2**20


def measured_busbw(record: dict) -> float:
    """Bytes per second, nccl-tests' bus bandwidth: from the faster time column, else as stated."""
    if "time_out_of_place_us" in record:
        seconds = min(record["time_out_of_place_us"], record["time_in_place_us"]) * 1e-6
        return record["size_bytes"] * BUS_FACTORS[record["collective"]](record["ranks"]) / seconds
    return record["busbw_GBps"] * 1e9


def group_of(record: dict) -> str:
    """The record's series: its id without the size."""
    return record["id"].rsplit("-", 1)[0]


def _size(n: float) -> str:
    if n < 1024:
        return f"{n:g} B"
    return f"{n / GIB:g} GiB" if n >= GIB else f"{n / MIB:g} MiB" if n >= MIB else f"{n / 1024:g} KiB"


def _held_out(record: dict) -> bool:
    from accelsim.validate.calibrate import is_held_out

    return is_held_out(record["id"])


def role(record: dict) -> str:
    if not record.get("fit", False):
        return "never fitted"
    return "held out" if _held_out(record) else "train (fabric latency)"


def fit_fabric(system: str, records: list[dict]) -> tuple[float, float, float]:
    """(fitted ``network.switch_latency`` in seconds, training MAPE on time, held-out MAPE)
    of ``system`` on its records marked ``fit``."""
    import math

    from accelsim.validate.calibrate import coordinate_descent, loss

    mine = [r for r in records if r["system"] == system and r.get("fit", False)]
    train = [r for r in mine if not _held_out(r)]
    held = [r for r in mine if _held_out(r)]

    class Latency:
        path, low, high = "network.switch_latency", 0.0, 400e-6

    def errors(items: list[dict], value: float) -> list[float]:
        topologies: dict[tuple, object] = {}
        out = []
        for r in items:
            overrides = (*r.get("overrides", ()), f"network.switch_latency={value * 1e6:.6f} us")
            if overrides not in topologies:
                topologies[overrides] = build_topology(load_arch(system, list(overrides)))
            t = simulate_collective(topologies[overrides], r["collective"], float(r["size_bytes"]), r["algorithm"],
                                    r["ranks"]).latency_s + tool_overhead_s(r["tool"])
            measured_s = r["size_bytes"] * BUS_FACTORS[r["collective"]](r["ranks"]) / measured_busbw(r)
            out.append(math.log(t / measured_s))
        return out

    import numpy as np

    best = coordinate_descent(lambda v: loss(np.array(errors(train, v[Latency.path]))), [Latency],
                              {Latency.path: 10e-6}, sweeps=2)[Latency.path]

    def mape(items):
        return sum(abs(math.expm1(e)) for e in errors(items, best)) / len(items) if items else float("nan")

    return best, mape(train), mape(held)


def compare(records: list[dict]) -> list[dict]:
    topologies: dict[tuple, object] = {}

    def run(r: dict, overrides: tuple[str, ...]):
        key = (r["system"], overrides)
        if key not in topologies:
            topologies[key] = build_topology(load_arch(r["system"], list(overrides)))
        result = simulate_collective(topologies[key], r["collective"], float(r["size_bytes"]), r["algorithm"],
                                     r["ranks"])
        return with_added_latency(result, tool_overhead_s(r["tool"]))

    rows = []
    for r in records:
        overrides = tuple(r.get("overrides", ()))
        result = run(r, overrides)
        measured = measured_busbw(r)
        rows.append({"record": r, "measured": measured, "predicted": result.busbw_bytes_per_s,
                     "ran": f"{result.algorithm}/{result.protocol}" if result.protocol else result.algorithm,
                     "error": result.busbw_bytes_per_s / measured - 1})
    return rows


def render(rows: list[dict], seconds: float) -> str:
    lines = [
        "# Multi-node collectives against published measurements",
        "",
        f"Generated by `python validation/report_multinode.py` ({seconds:.0f} s). Records:",
        "[`validation/collectives/multinode.json`](../../collectives/multinode.json), each with its source and",
        "notes; none was fitted on. Predicted: the published system config made the measured machine by the",
        "record's `overrides`, with the algorithm NCCL ran where the source forces one, else `auto`. Error =",
        "predicted / measured - 1 on bus bandwidth (nccl-tests' definition). A cluster's node is its plain name,",
        "the node's NCCL model fitted on one DGX H100 (`dgx-h100` is `dgx-h100-calibrated`; docs/collectives.md).",
        "",
        "## Per series",
        "",
        "| series | system, overrides | tool | records | sizes | mean error | max abs error |",
        "| --- | --- | --- | ---: | --- | ---: | ---: |",
    ]
    series: dict[str, list[dict]] = {}
    for row in rows:
        series.setdefault(group_of(row["record"]), []).append(row)
    for name, items in series.items():
        r = items[0]["record"]
        errors = [i["error"] for i in items]
        sizes = sorted(i["record"]["size_bytes"] for i in items)
        span = _size(sizes[0]) if len(sizes) == 1 else f"{_size(sizes[0])} - {_size(sizes[-1])}"
        lines.append(f"| {name} | {r['system']} {' '.join(r.get('overrides', ()))} | {r['tool']} | {len(items)} | "
                     f"{span} | {sum(errors) / len(errors):+.1%} | {max(abs(e) for e in errors):.1%} |")
    lines += ["", "## Every record", "",
              "| record | ranks | size | NCCL ran | measured busbw | predicted busbw | model ran | error |",
              "| --- | ---: | ---: | --- | ---: | ---: | --- | ---: |"]
    for row in rows:
        r = row["record"]
        lines.append(f"| {r['id']} | {r['ranks']} | {_size(r['size_bytes'])} | {r['algorithm']} | "
                     f"{row['measured'] / 1e9:.1f} GB/s | {row['predicted'] / 1e9:.1f} GB/s | {row['ran']} | "
                     f"{row['error']:+.1%} |")
    lines += ["", "## Sources", ""]
    seen = set()
    for row in rows:
        r = row["record"]
        if group_of(r) not in seen:
            seen.add(group_of(r))
            lines.append(f"- **{group_of(r)}**: {r['source']}. {r.get('notes', '')}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "validation" / "reports" / "multinode")
    parser.add_argument("--fit-fabric", metavar="SYSTEM", help="fit SYSTEM's network.switch_latency and print it")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    records = json.loads(RECORDS.read_text(encoding="utf-8"))["records"]
    if args.fit_fabric:
        value, train, held = fit_fabric(args.fit_fabric, records)
        print(f"{args.fit_fabric}: network.switch_latency {value * 1e6:.1f} us; MAPE on time: train {train:.1%}, "
              f"held out {held:.1%}")
        return 0
    rows = compare(records)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.md").write_text(render(rows, time.perf_counter() - started), encoding="utf-8")
    print(f"wrote {args.out / 'report.md'}: {len(rows)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
