"""``accelsim validate --power`` and ``accelsim calibrate --power``: energy against power
measurements, and the power model fitted on microbenchmark-level readings (``docs/power.md``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from accelsim.arch.loader import put
from accelsim.cli.output import table
from accelsim.errors import InputError
from accelsim.files import check_output_dir, check_output_file, write_text_atomic
from accelsim.validate.power import fit_power, mean_abs_error, predict, read_power_records

REPORT = "power.md"


def _records(args: argparse.Namespace, arch: str):
    from accelsim.arch.loader import measured_config

    records = [r for r in read_power_records(args.measurements) if r.arch == measured_config(arch)]
    if not records:
        raise InputError(f"no power records of {measured_config(arch)} in {' '.join(args.measurements)}",
                         source="--measurements")
    return records


def run_validate_power(args: argparse.Namespace) -> int:
    records = _records(args, args.arch)
    out = check_output_dir(args.output, "-o", inputs=[Path(p) for p in args.measurements],
                           writes=(REPORT,))
    predictions = [predict(r, args.arch, args.overrides) for r in records]
    rows = [(p.record.id, p.record.level, _measured(p), _predicted(p), f"{p.error:+.1%}") for p in predictions]
    header = ("record", "level", "measured", "predicted", "error")
    text = (f"# Energy on {args.arch}\n\n{len(records)} power records, predicted with `{args.arch}`"
            + (f" and `--set {' '.join(args.overrides)}`" if args.overrides else "")
            + f"; mean absolute error {mean_abs_error(predictions):.1%}.\n\n" + _markdown(header, rows)
            + "\n" + "".join(f"- `{p.record.id}`: {p.record.source}\n" for p in predictions))
    path = out / REPORT
    write_text_atomic(path, text, "-o")
    print(table(header, rows))
    print(f"wrote {path} ({len(records)} records, mean absolute error {mean_abs_error(predictions):.1%})")
    return 0


def _measured(p) -> str:
    r = p.record
    return f"{r.average_power_w:.4g} W" if r.energy_j is None else f"{r.energy_j:.4g} J at {r.average_power_w:.4g} W"


def _predicted(p) -> str:
    if p.energy_j is None:
        return f"{p.average_power_w:.4g} W"
    return f"{p.energy_j:.4g} J at {p.average_power_w:.4g} W, {p.clock_hz / 1e9:.3g} GHz"


def _markdown(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]) + "\n"


def run_calibrate_power(args: argparse.Namespace) -> int:
    from accelsim.cli.calibrate_cmd import _overlay_head, fit_date, refuse_overlay, write_overlay
    from accelsim.arch.model import load_arch

    refuse_overlay(args.arch, load_arch(args.arch).name, "--arch")
    records = _records(args, args.arch)
    output = check_output_file(args.output, "-o", inputs=[Path(p) for p in args.measurements])
    values = fit_power(records, args.arch, args.overrides)
    overlay = _overlay_head(args.arch, "with its power model fitted by accelsim calibrate --power", args.output)
    source = (f"accelsim calibrate --power on {len(records)} power records ({', '.join(r.id for r in records)}), "
              f"{fit_date()}")
    for path, value in values.items():
        parts = path.split(".")
        if parts[1].endswith("_per_flop"):  # one dtype of a per-dtype table: the table, the rest kept
            table_path, dtype = parts[:2], parts[2]
            put(overlay, table_path, _table_with(args.arch, overlay, table_path, dtype, value, source))
            continue
        put(overlay, parts, {"value": value, "basis": "fitted", "source": source})
    write_overlay(output, f"# Power model of {args.arch} fitted on power readings.\n", overlay)
    print(f"wrote {output}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    return 0


def _table_with(arch: str, overlay: dict, path: list[str], dtype: str, value: float, source: str) -> dict:
    from accelsim.arch.model import load_arch_and_spec

    current = overlay.get(path[0], {}).get(path[1])
    if current is None:
        spec = load_arch_and_spec(arch)[1]
        current = {"value": dict(getattr(spec.power, path[1]).value), "basis": "fitted", "source": source}
    current["value"][dtype] = value
    return current
