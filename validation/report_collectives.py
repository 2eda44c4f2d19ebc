"""Collectives against published measurements: nccl-tests all-reduce on 8x H100 / H200 /
B200, and the JAX scaling book's ICI all-gather model on TPU tori.

    python validation/report_collectives.py              # print the tables (markdown)
    python validation/report_collectives.py --fit        # refit, write the calibrated overlays
    python validation/report_collectives.py --write-docs # also put the tables into the docs

``--fit`` fits the NCCL model of ``dgx-h100`` (``accelsim.validate.collectives``) on the
training split of the DGX H100 records from 1 KiB up, and writes
``arch_configs/calibrated/dgx-h100-calibrated.yaml`` and, with the same values (same
NVLink 4 links and third-generation NVSwitch), ``dgx-h200-calibrated.yaml``. No H200 or
B200 record is used in fitting: H200 is the cross-system check.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys
from pathlib import Path

import yaml

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network.analytic import scaling_book_all_gather_terms, torus_case
from accelsim.units import format_quantity
from accelsim.validate.calibrate import is_held_out
from accelsim.validate.collectives import (
    PARAMETERS, CollectiveMeasurement, fit, fitted_leaves, load_measurements, log_errors, predict, split, with_values,
)
from accelsim.validate.collectives import overlay as node_overlay

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "validation" / "collectives" / "all_reduce.json"
CALIBRATED = ROOT / "arch_configs" / "calibrated"
DOCS = {ROOT / "docs" / "collectives.md": "collectives-accuracy", ROOT / "docs" / "accuracy.md": "collectives-accuracy"}
KIB, MIB, GIB = 2**10, 2**20, 2**30
FIT_RANGE = (KIB, 16 * GIB)


def fit_cases(records: list[CollectiveMeasurement]) -> list[CollectiveMeasurement]:
    return [m for m in records if m.system == "dgx-h100" and m.fit and FIT_RANGE[0] <= m.size_bytes <= FIT_RANGE[1]]


# ------------------------------------------------------------------ fitting and overlays


def refit(records: list[CollectiveMeasurement]) -> None:
    cases = fit_cases(records)
    node = load_arch("dgx-h100")
    result = fit(cases, node)
    train, held = split(cases)
    before = (_mape(log_errors(train, node)), _mape(log_errors(held, node)))
    after = (_mape(log_errors(train, result.node)), _mape(log_errors(held, result.node)))
    today = datetime.date.today().isoformat()
    source = (f"validation/report_collectives.py --fit on {len(train)} training records "
              f"(validation/collectives/all_reduce.json: nccl-tests all-reduce on 8x H100, 1 KiB to 16 GiB, and a "
              f"maintainer's ring figure); {len(held)} held out; {today}")
    note = (f"train MAPE {before[0]:.1%} -> {after[0]:.1%}; held-out MAPE {before[1]:.1%} -> {after[1]:.1%}")
    values = fitted_leaves(result, PARAMETERS, source, note)
    for system, extra in (("dgx-h100", ""), ("dgx-h200", " (fitted on DGX H100: same NVLink 4 and NVSwitch)")):
        _write_overlay(system, values, extra)
    print(f"fitted {', '.join(result.values)} in {result.evaluations} evaluations; {note}", file=sys.stderr)


def _write_overlay(system: str, values: dict, extra: str) -> None:
    spec = load_arch(system)
    overlay = node_overlay(system, spec.display_name, values, name=f"{system}-calibrated",
                           description=f"{system} with its NCCL model fitted on nccl-tests all-reduce records{extra}.")
    header = (f"# Written by `python validation/report_collectives.py --fit`: the NCCL model of {system}\n"
              f"# fitted on DGX H100 nccl-tests records. Published numbers stay in the config this extends.\n")
    path = CALIBRATED / f"{system}-calibrated.yaml"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(header + yaml.safe_dump(overlay, sort_keys=False, width=100), encoding="utf-8")
    tmp.replace(path)


# ------------------------------------------------------------------ tables


def _mape(log_errs) -> float:
    return float(sum(abs(math.expm1(e)) for e in log_errs) / len(log_errs)) if len(log_errs) else math.nan


def _size(n: float) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


DERIVED_FROM = {
    "all-reduce-dgx-b200-8r-ring-nvls-off-8GiB": "collectives.link_efficiency",
    "all-reduce-dgx-b200-8r-nvls-8GiB": "collectives.nvls_efficiency",
}
"""Records a published config's value was derived from (its ``source`` cites them): shown,
never counted as checks (B200 has no curve to fit, so each value comes from one record)."""


def _role(m: CollectiveMeasurement) -> str:
    if m.id in DERIVED_FROM:
        return "config derived from it"
    if m.system != "dgx-h100":
        return f"cross-system, {m.tool}"
    if not m.fit:
        return "cross-check, never fitted"
    if not FIT_RANGE[0] <= m.size_bytes <= FIT_RANGE[1]:
        return "not fitted"
    return "held out" if is_held_out(m.id) else "train"


def carried_fit(system: str):
    """``system`` with the DGX H100 fit's values in place of its own (the what-if use:
    calibrate on one system, predict another without refitting)."""
    fitted = load_arch(str(CALIBRATED / "dgx-h100-calibrated.yaml")).collectives
    node = load_arch(system)
    return with_values(node, {p.path: p.get(fitted) for p in PARAMETERS
                              if p.get(fitted) is not None and p.get(node.collectives) is not None})


def nccl_table(records: list[CollectiveMeasurement]) -> tuple[str, dict]:
    topos = {}

    def topo(name):
        if name not in topos:
            topos[name] = build_topology(load_arch(name))
        return topos[name]

    def carried(system):
        key = ("carried", system)
        if key not in topos:
            topos[key] = build_topology(carried_fit(system))
        return topos[key]

    lines = ["| system | GPUs | size | NCCL ran | measured busbw | published config | calibrated | model ran | role |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |"]
    errors: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for m in records:
        published = predict(topo(m.system), m)
        overlay = CALIBRATED / f"{m.system}-calibrated.yaml"
        calibrated_name = str(overlay) if overlay.exists() else None  # a path: --fit may just have written it
        cal = predict(topo(calibrated_name), m) if calibrated_name else None
        measured = m.busbw_bytes_per_s
        err_pub = published.busbw_bytes_per_s / measured - 1
        row = [m.system, str(m.ranks), _size(m.size_bytes), m.algorithm, f"{measured / 1e9:.2f} GB/s",
               f"{published.busbw_bytes_per_s / 1e9:.2f} ({err_pub:+.1%})"]
        if cal is not None:
            err = cal.busbw_bytes_per_s / measured - 1
            row += [f"{cal.busbw_bytes_per_s / 1e9:.2f} ({err:+.1%})", f"{cal.algorithm}/{cal.protocol}"]
            errors.setdefault((m.system, _role(m)), []).append((m.size_bytes, err))
        else:  # no overlay of its own: the DGX H100 fit carried over, and the published config
            moved = predict(carried(m.system), m)
            err = moved.busbw_bytes_per_s / measured - 1
            row += [f"{moved.busbw_bytes_per_s / 1e9:.2f} ({err:+.1%}), H100 fit", f"{published.algorithm}/{published.protocol}"]
            errors.setdefault((m.system + " (published)", _role(m)), []).append((m.size_bytes, err_pub))
            # nothing of the carried config came from this system's records
            errors.setdefault((m.system + " (DGX H100 fit carried)", f"cross-system, {m.tool}"), []).append(
                (m.size_bytes, err))
        lines.append("| " + " | ".join(row + [_role(m)]) + " |")
    return "\n".join(lines), errors


def floors_table(errors: dict) -> str:
    lines = ["| system, records | role | records | max abs error, 1 KiB to 8 GiB | max abs error, >= 64 MiB | MAPE |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for (system, role), items in sorted(errors.items()):
        band = [abs(e) for s, e in items if KIB <= s <= 8 * GIB]
        big = [abs(e) for s, e in items if 64 * MIB <= s <= 8 * GIB]
        every = [abs(e) for _, e in items]
        lines.append(f"| {system} | {role} | {len(items)} | {_max(band)} | {_max(big)} | "
                     f"{sum(every) / len(every):.1%} |")
    return "\n".join(lines)


def _max(values: list[float]) -> str:
    return f"{max(values):.1%}" if values else "-"


# ------------------------------------------------------------------ TPU: the scaling book


TPU_CASES = (
    ("tpu-v5e-16x16", "full slice", None), ("tpu-v5e-16x16", "one axis (16, wraps)", 0),
    ("tpu-v5p-8x8x8", "full slice", None), ("tpu-v4-4x4x4", "full slice", None),
    ("tpu-v6e-16x16", "one axis (16, wraps)", 1), ("tpu-v5e-4x4", "one axis (4, no wrap)", 0),
)
BANDWIDTH_BOUND = 20
"""The book's formula "applies" (its bandwidth-bound regime) where its bandwidth term is
at least this many times its latency term."""


def tpu_rows(sizes=(1 * MIB, 64 * MIB, 256 * MIB, 1 * GIB)) -> tuple[str, float]:
    lines = ["| system | group | size | scaling book (latency, bandwidth term) | simulated | error | regime |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    worst = 0.0
    for system, label, axis in TPU_CASES:
        topo = build_topology(load_arch(system))
        group, axes, wraps = torus_case(topo, axis)
        link = next(iter(topo.links.values()))
        for size in sizes:
            latency, bandwidth = scaling_book_all_gather_terms(size, axes, wraps, link.bandwidth_bytes_per_s,
                                                               link.latency_s)
            book = max(latency, bandwidth)
            sim = simulate_collective(topo, "all-gather", size, group=group).latency_s
            err = sim / book - 1
            bound = bandwidth >= BANDWIDTH_BOUND * latency
            if bound:
                worst = max(worst, abs(err))
            lines.append(f"| {system} | {label} | {_size(size)} | {book * 1e6:.1f} us ({latency * 1e6:.1f}, "
                         f"{bandwidth * 1e6:.1f}) | {sim * 1e6:.1f} us | {err:+.1%} | "
                         f"{'bandwidth-bound' if bound else 'latency matters'} |")
    return "\n".join(lines), worst


# ------------------------------------------------------------------ the report


def report(records: list[CollectiveMeasurement]) -> str:
    table, errors = nccl_table(records)
    tpu, worst = tpu_rows()
    overlay = CALIBRATED / "dgx-h100-calibrated.yaml"
    cal = load_arch(str(overlay)).collectives if overlay.exists() else None
    fitted = ""
    if cal is not None:
        pub = load_arch("dgx-h100").collectives
        fitted = "\n".join(
            f"| `collectives.{p.path}` | {_fmt(p, p.get(pub))} | {_fmt(p, p.get(cal))} |" for p in PARAMETERS)
        fitted = "| parameter | published (NCCL's figure or estimate) | fitted on DGX H100 |\n| --- | ---: | ---: |\n" + fitted
    return f"""Generated by `python validation/report_collectives.py` (measurements:
`validation/collectives/all_reduce.json`, each record with its source). Error = predicted /
measured - 1 on bus bandwidth. "Published config" is `dgx-*` as committed (NCCL's own
tuning-table latencies, link efficiency 0.82 from an NVIDIA maintainer's figure);
"calibrated" is `dgx-*-calibrated` (the NCCL model fitted on the DGX H100 training split;
the H200 overlay carries the same values); for a system without an overlay (B200, GB200 NVL72) that
column carries the DGX H100 fit's values into its config ("H100 fit": what a what-if
study calibrated on H100 would predict), and "model ran" is the published config's
choice. The measured time of an nccl-tests row is the
faster of its out-of-place and in-place columns (the 4 KiB out-of-place run took 23.6 us
against 16.5 us in place). "NCCL ran": `auto` = NCCL's own choice with NVLS enabled, `ring`
= NVLS disabled, `nvls` = NCCL reported NVLS; the model is run with `auto` (and `ring` where
NVLS was off), so choosing the wrong algorithm counts as error.

**Where it stands**

{floors_table(errors)}

{fitted}

**Every record**

{table}

**TPU: ring all-gather against the JAX scaling book** (its formula where it gives one,
with the hop latency and link bandwidth of the chip config). Worst error where the book's
bandwidth term is at least {BANDWIDTH_BOUND}x its latency term: **{worst:.1%}** (floor: 10%).
Below that the two differ by design: the book takes the max of the two terms, the
simulator adds them (plus the chip's 2 us launch), since a pipelined ring pays its hops
and its bytes:

{tpu}
"""


def _fmt(p, value) -> str:
    if value is None:
        return "-"
    return format_quantity(value, p.unit) if p.unit else f"{value:.4g}"


def write_docs(text: str) -> None:
    for path, marker in DOCS.items():
        doc = path.read_text(encoding="utf-8")
        start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
        if start not in doc:
            raise SystemExit(f"{path} has no {start} marker")
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
        path.write_text(pattern.sub(lambda _m: f"{start}\n{text}\n{end}", doc), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit and write arch_configs/calibrated/dgx-h*-calibrated.yaml")
    parser.add_argument("--write-docs", action="store_true", help="replace the tables in docs/collectives.md and docs/accuracy.md")
    args = parser.parse_args()
    records = load_measurements(MEASUREMENTS)
    if args.fit:
        refit(records)
    text = report(records)
    print(text)
    if args.write_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
