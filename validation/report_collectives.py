"""Collectives against published measurements: nccl-tests all-reduce on 8x H100 / H200 /
B200 / A100, and the JAX scaling book's ICI all-gather model on TPU tori.

    python validation/report_collectives.py              # print the tables (markdown)
    python validation/report_collectives.py --fit        # refit, write the calibrated overlays
    python validation/report_collectives.py --write-docs # also put the tables into the docs
    python validation/report_collectives.py --fit-tool   # print the torch.distributed per-call overhead fit

``--fit`` fits the NCCL model of ``dgx-h100-published`` (``accelsim.validate.collectives``)
on the training split of the DGX H100 records from 1 KiB up, and writes an overlay for
every NVSwitch node (:data:`NODES`): DGX H100 with the fitted values, the others with what
of them carries (``accelsim.network.nccl_tables.CARRIES``: latencies to every node,
bandwidth figures within NCCL's architecture class, so DGX H200 takes them all, DGX B200
and DGX A100 the latencies only). Each overlay is the node's plain name (``aliases``), the
published figures stay under ``<node>-published``. No H200, B200 or A100 record is fitted.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys
from pathlib import Path

import numpy as np
import yaml

from accelsim.arch.model import load_arch
from accelsim.network import build_topology, simulate_collective
from accelsim.network import nccl_tables
from accelsim.network.nccl_tables import CARRIES, CYCLE_RATE_PATHS, LATENCY_PATHS, carries_to, latency_carry_scale
from accelsim.network.analytic import scaling_book_all_gather_terms, torus_case
from accelsim.units import format_quantity
from accelsim.validate.calibrate import coordinate_descent, is_held_out, loss
from accelsim.validate.collectives import (
    PARAMETERS, CollectiveMeasurement, TuningParameter, fit, fitted_leaves, load_measurements, log_errors, predict,
    split, tool_overhead_s,
)
from accelsim.validate.collectives import overlay as node_overlay

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "validation" / "collectives" / "all_reduce.json"
MULTINODE = ROOT / "validation" / "collectives" / "multinode.json"
CALIBRATED = ROOT / "arch_configs" / "calibrated"
DOCS = {ROOT / "docs" / "collectives.md": "collectives-accuracy", ROOT / "docs" / "accuracy.md": "collectives-accuracy"}
KIB, MIB, GIB = 2**10, 2**20, 2**30
FIT_RANGE = (KIB, 16 * GIB)


def fit_cases(records: list[CollectiveMeasurement]) -> list[CollectiveMeasurement]:
    return [m for m in records if m.system == FITTED and m.fit and FIT_RANGE[0] <= m.size_bytes <= FIT_RANGE[1]]


FITTED = "dgx-h100"
NODES = ("dgx-h100", "dgx-h200", "dgx-b200", "dgx-a100")
"""Nodes whose plain name is an overlay written by ``--fit``: the fitted one and the nodes
its values carry to (none of them has small-message nccl-tests of its own)."""


# ------------------------------------------------------------------ fitting and overlays


def refit(records: list[CollectiveMeasurement]) -> None:
    cases = fit_cases(records)
    node = load_arch(published(FITTED))
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
    generation = node.collectives.generation
    for system in NODES:
        target = load_arch(published(system)).collectives
        if system == FITTED:
            carried = values
        else:
            carried = {path: {**leaf, "source": f"carried from DGX H100 ({CARRIES[path]}): {leaf['source']}"}
                       for path, leaf in values.items()
                       if carries_to(path, generation, target.generation) and _present(target, path)}
            carried = _in_cycles(carried, result.node.collectives, target)
        _write_overlay(system, carried, generation, target.generation)
    print(f"fitted {', '.join(result.values)} in {result.evaluations} evaluations; {note}", file=sys.stderr)


def _in_cycles(carried: dict, fitted, target) -> dict:
    """The carried leaves with every latency of the fitted node's NCCL model (fitted or NCCL's
    own figure) scaled to ``target``'s kernel clock (``nccl_tables.latency_carry_scale``);
    unchanged where the scale is 1."""
    scale = latency_carry_scale(fitted.kernel_clock_hz, target.kernel_clock_hz)
    if scale == 1.0:
        return carried
    how = (f"in GPU cycles: x {scale:.4f} = {fitted.kernel_clock_hz / 1e9:g} GHz (DGX H100's kernel_clock) / "
           f"{target.kernel_clock_hz / 1e9:g} GHz (this node's)")
    scaled = dict(carried)
    paths = [(path, "seconds", scale) for path in LATENCY_PATHS] + [(path, "bytes_per_s", 1 / scale)
                                                                  for path in CYCLE_RATE_PATHS]
    for path, unit, factor in paths:
        getter = TuningParameter(path, 0.0, 0.0, unit)
        if getter.get(target) is None or getter.get(fitted) is None:
            continue
        value = format_quantity(getter.get(fitted) * factor, unit)
        if path in carried:
            leaf = carried[path]
            scaled[path] = {**leaf, "value": value, "source": f"{leaf['source']}; {how}",
                            "note": f"{leaf['note']}; {leaf['value']} on DGX H100"}
        else:
            scaled[path] = {"value": value, "basis": "derived",
                            "source": f"carried from DGX H100 (every node), NCCL's own figure there "
                                      f"({format_quantity(getter.get(fitted), unit)}, {nccl_tables.SOURCE}), {how}"}
    return scaled


def published(system: str) -> str:
    """The config of a node's published figures (its plain name is the fitted overlay)."""
    return f"{system}-published"


def _present(tuning, path: str) -> bool:
    return next(p for p in PARAMETERS if p.path == path).get(tuning) is not None


def _write_overlay(system: str, values: dict, fitted_generation: str, generation: str) -> None:
    spec = load_arch(published(system))
    if system == FITTED:
        how = "fitted on its nccl-tests all-reduce records"
    elif generation == fitted_generation:
        how = f"fitted on DGX H100 nccl-tests (same NCCL class, {generation}: every fitted value carries)"
    else:
        how = (f"NCCL's latencies fitted on DGX H100 nccl-tests, in GPU cycles where both kernel clocks are stated "
               f"(NCCL's latency table is one for every GPU); its bandwidth figures stay its own ({generation}, not "
               f"{fitted_generation})")
    overlay = node_overlay(published(system), spec.display_name.removesuffix(" (published figures)"), values,
                           name=f"{system}-calibrated", description=f"{system} with its NCCL model {how}.")
    overlay = {**overlay, "aliases": [system]}
    header = (f"# Written by `python validation/report_collectives.py --fit`: the NCCL model of {system}, {how}.\n"
              f"# `{system}` names this overlay (aliases); the published figures stay in the config it extends.\n")
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
    if (m.system, m.tool) == TOOL_FITTED:
        return f"{m.tool}, {'held out' if is_held_out(m.id) else 'train (tool overhead)'}"
    if m.system != FITTED:
        return f"never fitted, {m.tool}"
    if not m.fit:
        return "cross-check, never fitted"
    if not FIT_RANGE[0] <= m.size_bytes <= FIT_RANGE[1]:
        return "not fitted"
    return "held out" if is_held_out(m.id) else "train"


def _published_or_none(system: str) -> str | None:
    """The published-figures config of ``system``, where its plain name is an overlay."""
    return published(system) if (ROOT / "arch_configs" / "systems" / f"{published(system)}.yaml").exists() else None


def nccl_table(records: list[CollectiveMeasurement]) -> tuple[str, dict]:
    topos = {}

    def topo(name):
        if name not in topos:
            topos[name] = build_topology(load_arch(name))
        return topos[name]

    lines = ["| system | GPUs | size | NCCL ran | measured busbw | published figures | plain name | model ran | role |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |"]
    errors: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for m in records:
        measured = m.busbw_bytes_per_s
        plain = predict(topo(m.system), m)
        err = plain.busbw_bytes_per_s / measured - 1
        figures = _published_or_none(m.system)
        pub = predict(topo(figures), m) if figures else None
        pub_text = f"{pub.busbw_bytes_per_s / 1e9:.2f} ({pub.busbw_bytes_per_s / measured - 1:+.1%})" if pub else "-"
        lines.append("| " + " | ".join([m.system, str(m.ranks), _size(m.size_bytes), m.algorithm,
                                         f"{measured / 1e9:.2f} GB/s", pub_text,
                                         f"{plain.busbw_bytes_per_s / 1e9:.2f} ({err:+.1%})",
                                         f"{plain.algorithm}/{plain.protocol}", _role(m)]) + " |")
        errors.setdefault((m.system, _role(m)), []).append((m.size_bytes, err))
        if pub is not None:
            errors.setdefault((figures, _role(m)), []).append((m.size_bytes, pub.busbw_bytes_per_s / measured - 1))
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


def systems_table(records: list[CollectiveMeasurement]) -> str:
    """Every system with measurements (nodes and clusters, as their plain names give them):
    whether any of its records was fitted, how many, MAPE and worst error on bus bandwidth.
    A system none of whose records was fitted is marked "never fitted"."""
    topologies: dict[tuple, object] = {}
    by_system: dict[str, list[tuple[CollectiveMeasurement, float]]] = {}
    for m in records:
        key = (m.system, m.overrides)
        if key not in topologies:
            topologies[key] = build_topology(load_arch(m.system, list(m.overrides)))
        predicted = predict(topologies[key], m).busbw_bytes_per_s
        by_system.setdefault(m.system, []).append((m, predicted / m.busbw_bytes_per_s - 1))
    lines = ["| system | fitted | records | MAPE | worst | MAPE, records no fit touched |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for system, items in sorted(by_system.items(), key=lambda kv: (any(_was_fitted(m) for m, _ in kv[1]), kv[0])):
        fitted = [m for m, _ in items if _was_fitted(m)]
        what = "never fitted" if not fitted else (
            "its NCCL model, train split" if system == FITTED else "fabric latency, train split"
            if system in FABRIC_FITTED else f"{TOOL_FITTED[1]}'s overhead, train split"
            if system == TOOL_FITTED[0] else "link and NVLS efficiency, one record each")
        untouched = [abs(e) for m, e in items if not _was_fitted(m)]
        every = [abs(e) for _, e in items]
        worst = max(items, key=lambda item: abs(item[1]))
        lines.append(f"| {system} | {what} | {len(items)} | {sum(every) / len(every):.1%} | {worst[1]:+.1%} "
                     f"({_size(worst[0].size_bytes)}) | "
                     f"{f'{sum(untouched) / len(untouched):.1%} ({len(untouched)})' if untouched else '-'} |")
    return "\n".join(lines)


FABRIC_FITTED = ("gcp-a3-mega", "aws-p6-b200")
"""Cloud presets whose fabric step latency was fitted on their own series
(``validation/report_multinode.py --fit-fabric``)."""


def _was_fitted(m: CollectiveMeasurement) -> bool:
    """Did a fit use this record: DGX H100's training split, a cloud preset's fabric
    training split, or a record a published value was derived from?"""
    if m.id in DERIVED_FROM:
        return True
    if not m.fit or is_held_out(m.id):
        return False
    if m.system == FITTED:
        return FIT_RANGE[0] <= m.size_bytes <= FIT_RANGE[1]
    return m.system in FABRIC_FITTED or (m.system, m.tool) == TOOL_FITTED


TOOL_FITTED = ("dgx-h200", "torch.distributed")
"""The series whose training split fits the tool's per-call overhead
(``accelsim.validate.collectives.TOOL_CALL_OVERHEAD_S``, ``--fit-tool``)."""


def fit_tool_overhead(records: list[CollectiveMeasurement]) -> tuple[float, float, float]:
    """(per-call overhead in seconds, bus-bandwidth MAPE of the training split, of the held-out
    split) of :data:`TOOL_FITTED`'s tool, fitted on that series' training split with the
    node's NCCL model as its plain name gives it."""
    system, tool = TOOL_FITTED
    series = [m for m in records if m.system == system and m.tool == tool and m.fit]
    train, held = split(series)
    topo = build_topology(load_arch(system))
    bare = {m.id: predict(topo, m, tool_overhead=0.0).latency_s for m in series}

    class Overhead:
        path, low, high = "overhead", 0.0, 200e-6

    def log_errs(items, overhead_s):
        return np.array([math.log((bare[m.id] + overhead_s) / m.time_s) for m in items])

    best = coordinate_descent(lambda v: loss(log_errs(train, v[Overhead.path])), [Overhead],
                              {Overhead.path: 10e-6}, sweeps=3)[Overhead.path]

    def mape(items):
        return sum(abs(m.time_s / (bare[m.id] + best) - 1) for m in items) / len(items) if items else float("nan")

    return best, mape(train), mape(held)


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
    systems = systems_table(records + load_measurements(MULTINODE))
    tpu, worst = tpu_rows()
    pub = load_arch(published(FITTED)).collectives
    cal = load_arch(FITTED).collectives
    fitted = "\n".join(
        f"| `collectives.{p.path}` | {_fmt(p, p.get(pub))} | {_fmt(p, p.get(cal))} | {CARRIES[p.path]} |"
        for p in PARAMETERS)
    fitted = ("| parameter | published (NCCL's figure or estimate) | fitted on DGX H100 | carries to |\n"
              "| --- | ---: | ---: | --- |\n" + fitted)
    return f"""Generated by `python validation/report_collectives.py` (measurements:
`validation/collectives/all_reduce.json`, each record with its source). Error = predicted /
measured - 1 on bus bandwidth. "Published figures" is `dgx-*-published` (NCCL's own
tuning-table latencies, link efficiency 0.82 from an NVIDIA maintainer's figure); "plain
name" is what `dgx-*` gives: the NCCL model fitted on the DGX H100 training split, carried
to the other nodes by NCCL's own split (latencies to every node, bandwidth figures within
an architecture class: all of it to DGX H200, the latencies to DGX B200 and DGX A100;
GB200 NVL72 extends DGX B200). Only DGX H100 records were fitted, and the training split of
the DGX H200 torch.distributed series for that tool's per-call host overhead ({tool_overhead_s(TOOL_FITTED[1]) * 1e6:.1f} us added
to every torch.distributed record: its benchmark times one call on an idle GPU, so the
interval holds the call's dispatch; `accelsim/validate/collectives.py`,
`TOOL_CALL_OVERHEAD_S`). The measured time of an
nccl-tests row is the faster of its out-of-place and in-place columns (the 4 KiB
out-of-place run took 23.6 us against 16.5 us in place). "NCCL ran": `auto` = NCCL's own
choice with NVLS enabled, `ring` = NVLS disabled, `nvls` = NCCL reported NVLS; the model is
run with `auto` (and `ring` where NVLS was off), so choosing the wrong algorithm counts as
error.

**Every system with measurements** (all-reduce and reduce-scatter records of
`validation/collectives/all_reduce.json` and `multinode.json`, each system as its plain name
gives it; error on bus bandwidth; "MAPE, records no fit touched" leaves out every record a
fit used):

{systems}

**Where it stands, single nodes**

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
    parser.add_argument("--fit-tool", action="store_true",
                        help="print torch.distributed's per-call overhead fitted on the DGX H200 series' training split")
    args = parser.parse_args()
    records = load_measurements(MEASUREMENTS)
    if args.fit_tool:
        value, train, held = fit_tool_overhead(records)
        print(f"{TOOL_FITTED[1]}: per-call overhead {value * 1e6:.1f} us; bus-bandwidth MAPE train {train:.1%}, "
              f"held out {held:.1%}")
        return
    if args.fit:
        refit(records)
    text = report(records)
    print(text)
    if args.write_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
