"""``accelsim calibrate``: fit a chip's calibratable parameters to measurements and write
an overlay config that extends the published one."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

import yaml

from accelsim.arch.loader import (
    builtin_names, find_config, is_calibration, load_raw, measured_config, parse_override, put, read_yaml,
)
from accelsim.arch.model import config_files, load_arch_and_spec
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.simulate_cmd import load_chip
from accelsim.errors import InputError, shown
from accelsim.families import FAMILIES
from accelsim.files import check_output_file, write_text_atomic
from accelsim.workers import MAX_WORKERS
from accelsim.validate.calibrate import (
    DEFAULT_PARAMETERS,
    FITTABLE_PARAMETERS,
    HELD_OUT_PER_TEN,
    METHODS,
    MIN_INTERVAL_RECORDS,
    SPLITS,
    errors,
    fit,
    intervals,
    holds_out,
    mape,
    prepare,
    with_final_configs,
)
from accelsim.validate.compare import read_measurements
from accelsim.validate.levels import refuse_kernel_level

MAX_EPOCH_S = 253402300799
"""9999-12-31T23:59:59Z, the last second a date of four digits names (SOURCE_DATE_EPOCH)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="fit calibratable parameters to measurements; write an overlay config")
    p.add_argument("--arch", help="the published chip config to start from (kernel measurements)")
    p.add_argument("--system", help="a published node config whose NCCL model (its collectives section) to fit to "
                                    "collective measurements instead (nccl-tests runs: accelsim import nccl-tests)")
    p.add_argument("--measurements", nargs="+", required=True, metavar="PATH",
                   help="measurement files or folders (docs/measurement-format.md); a fit takes microbenchmark-level "
                        "records only (elementwise STREAM kernels, copies): kernel-level ones are for validate and "
                        "--bands-only")
    p.add_argument("--exclude", action="append", default=[], metavar="TEXT",
                   help="leave out records whose implementation contains TEXT (repeatable)")
    p.add_argument("--fit", action="append", default=[], metavar="PATH",
                   help=f"fit only these parameters (repeatable; default: all of {', '.join(p.path for p in DEFAULT_PARAMETERS)}; "
                        f"also {', '.join(p.path for p in FITTABLE_PARAMETERS if p not in DEFAULT_PARAMETERS)})")
    p.add_argument("-o", "--output", required=True, metavar="FILE.yaml", help="the overlay config to write")
    p.add_argument("--scope", action="append", default=[], metavar="FAMILY",
                   help="write the fitted values for this kernel family only (family_values), not for the whole chip; "
                        "repeatable (the same values for each family named); every record must be of one of them; the "
                        "fit starts from the value the chip gives the first family named (family_values it has)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes simulating the records of each evaluation (default 1; the fit is the same)")
    p.add_argument("--split-by", choices=SPLITS, default=SPLITS[0],
                   help="hold out records by a hash of each record's id (record, the default) or of its kernel "
                        "without its config (kernel: every config of a held-out kernel is held out); validate "
                        "takes the same option to label its report")
    p.add_argument("--method", choices=METHODS, default=METHODS[0],
                   help="gauss-newton (default: damped Gauss-Newton steps, then a narrow line search per parameter) or "
                        "descent (line searches over each parameter's whole range, sweep after sweep: several times "
                        "the evaluations; how overlays before 2026-12-01 were fitted)")
    p.add_argument("--bands-only", action="store_true",
                   help="fit nothing: write an overlay with the --set values and, per kernel family, the "
                        "uncertainty band of every record's residuals (nothing is fitted, so all are out of sample "
                        "unless a --set value was fitted on them); for a config whose fits do not beat it on held-out "
                        "records")
    p.add_argument("--power", action="store_true",
                   help="fit the power model (idle and static power, energy per flop and per HBM byte) on "
                        "microbenchmark-level power readings (docs/power.md) instead")
    add_set_option(p)
    p.set_defaults(run=run_calibrate, options_of_fields={"arch": "--arch", "system": "--system",
                                                         "measurements": "--measurements"})


def chosen_parameters(paths: list[str]):
    known = {p.path: p for p in FITTABLE_PARAMETERS}
    for path in paths:
        if path not in known:
            raise InputError(f"not a calibratable parameter; expected one of: {', '.join(known)}", source="--fit",
                             field=path)
    return [known[p] for p in paths] if paths else list(DEFAULT_PARAMETERS)


def select(paths, arch: str, exclude: list[str]):
    measured = read_measurements(paths)
    records = [m for m in measured if m.arch == arch]
    records = [m for m in records if not any(text in m.implementation for text in exclude)]
    if not records:
        others = sorted({f"{m.arch} ({m.file})" for m in measured if m.arch != arch})
        raise InputError(f"no measurement records for arch {shown(arch)}" + (" (after --exclude)" if exclude else "")
                         + (f"; the files given hold records of {', '.join(others[:3])}" if others else ""),
                         source="--measurements")
    return records


def check_jobs(jobs: int, flag: str = "--jobs") -> None:
    if not 1 <= jobs <= MAX_WORKERS:
        raise InputError(f"expected 1 to {MAX_WORKERS} worker processes, got {jobs}", source=flag)


def run_calibrate(args: argparse.Namespace) -> int:
    check_jobs(args.jobs)
    if (args.arch is None) == (args.system is None):
        raise InputError("give --arch CHIP (kernel measurements) or --system NODE (collective measurements), one of "
                         "them", source="calibrate")
    if args.system is not None:
        from accelsim.cli.calibrate_collectives import run_calibrate_system

        return run_calibrate_system(args)
    if args.power:
        from accelsim.cli.power_cmd import run_calibrate_power

        return run_calibrate_power(args)
    chip = load_chip(args.arch, args.overrides)
    refuse_overlay(args.arch, chip.name, "--arch")
    if args.bands_only:
        for given, option in ((args.fit, "--fit"), (args.scope, "--scope"),
                              (args.split_by != SPLITS[0], "--split-by"), (args.method != METHODS[0], "--method")):
            if given:
                raise InputError(f"--bands-only fits nothing and holds nothing out; drop {option} or --bands-only",
                                 source=option)
    parameters = chosen_parameters(args.fit)
    records = select(args.measurements, chip.name, args.exclude)
    for family in args.scope:
        if family not in FAMILIES:
            raise InputError(f"unknown kernel family {shown(family)}; expected one of: {', '.join(FAMILIES)}",
                             source="--scope")
    if args.scope:
        scoped = " and ".join(args.scope)
        others = sorted({m.family for m in records} - set(args.scope))
        if others:
            raise InputError(f"the values would hold for {scoped} kernels only, but records of "
                             f"{', '.join(others)} were given (use --exclude or pass only {scoped} files)",
                             source="--scope")
    if args.bands_only:  # fits nothing: a band of residuals is a check, kernel records included
        return _write_bands(args, chip, records)
    refuse_kernel_level(records)
    if all(holds_out(m, args.split_by) for m in records):
        unit = "record's id" if args.split_by == "record" else "record's kernel (--split-by kernel)"
        raise InputError(f"all {len(records)} records fall in the held-out split (it is chosen by a hash of each "
                         f"{unit}, about {HELD_OUT_PER_TEN} in 10); a fit needs training records: give more",
                         source="--measurements")
    output = check_output_file(args.output, "-o", inputs=_input_files(args, records))
    overlay_name(args.arch, args.output)
    args.fit_date = fit_date()
    print(f"calibrating {chip.name} on {len(records)} records ...")
    cases = prepare(records, args.arch, args.overrides, jobs=args.jobs)
    result = fit(cases, args.arch, parameters, base_overrides=args.overrides, jobs=args.jobs,
                 family=args.scope[0] if args.scope else None, method=args.method, split=args.split_by,
                 progress=lambda line: print(line, file=sys.stderr, flush=True))
    result = with_final_configs(result, args.arch, args.overrides, jobs=args.jobs)
    write_overlay(output, _header(result), _overlay(args, chip, result))
    _print_summary(result, output)
    return 0


def _input_files(args: argparse.Namespace, records) -> list:
    """Every file the command reads: the chip config and those it is built from (``--arch``
    may be a name), and the measurement files; ``-o`` must not be one of them."""
    return [*config_files(args.arch), *sorted({m.file for m in records})]


def _write_bands(args: argparse.Namespace, chip, records) -> int:
    """``--bands-only``: the config as given, every record predicted, residual bands written."""
    output = check_output_file(args.output, "-o", inputs=_input_files(args, records))
    overlay_name(args.arch, args.output)
    args.fit_date = fit_date()
    print(f"predicting {len(records)} records on {chip.name} (--bands-only: nothing is fitted) ...")
    families = {}
    for m in records:
        families.setdefault(m.family, []).append(m)
    thin = sorted(f for f, ms in families.items() if len(ms) < MIN_INTERVAL_RECORDS)
    if len(thin) == len(families):
        raise InputError(f"a band needs at least {MIN_INTERVAL_RECORDS} records of a kernel family; "
                         f"{', '.join(f'{f}: {len(families[f])}' for f in thin)}", source="--measurements")
    cases = prepare(records, args.arch, args.overrides, jobs=args.jobs)
    log_errors = errors(cases, args.arch, args.overrides)
    bands = _bands(cases, log_errors, lambda family, count: (
        f"residuals of every {family} record, none fitted: accelsim calibrate --bands-only on {count} records "
        f"({', '.join(sorted({m.file for m in families[family]}))}{_excluded(args)}); {args.fit_date}"))
    overlay = _overlay_head(args.arch, "with the uncertainty bands of its residuals (nothing fitted)", args.output)
    _given(args, None, overlay)
    overlay["uncertainty"] = bands
    header = (f"# Written by `accelsim calibrate --bands-only`: {chip.name} as published"
              f"{' with the --set values below' if args.overrides else ''}, nothing fitted,\n"
              f"# and the band of its residuals on the records given, per kernel family.\n")
    write_overlay(output, header, overlay)
    for family, band in bands.items():
        print(f"  {family}: p05 {band['p05']:+.1%}, p95 {band['p95']:+.1%} ({band['records']} records)")
    if thin:
        print(f"no band for {', '.join(thin)}: fewer than {MIN_INTERVAL_RECORDS} records", file=sys.stderr)
    print(f"MAPE {mape(log_errors):.1%} ({len(records)} records)")
    print(f"wrote {output}")
    return 0


def _bands(cases, log_errors, source) -> dict:
    """Per kernel family with enough records: the 5th and 95th percentile of its relative
    residuals, its record count, and ``source(family, count)``."""
    return {family: {"p05": round(p05, 4), "p95": round(p95, 4), "records": count, "source": source(family, count)}
            for family, (p05, p95, count) in intervals(cases, log_errors).items() if count >= MIN_INTERVAL_RECORDS}


def _excluded(args: argparse.Namespace) -> str:
    return f"; records of {', '.join(args.exclude)} excluded" if args.exclude else ""


def fit_date() -> str:
    """The date an overlay records: today, or that of ``SOURCE_DATE_EPOCH`` (seconds since
    1970, UTC) when it is set, so the same fit writes the same bytes on any day."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not epoch:  # unset, or set empty (as unset, the reproducible-builds convention)
        return datetime.date.today().isoformat()
    if not epoch.strip().isdigit() or int(epoch) > MAX_EPOCH_S:
        raise InputError(f"expected whole seconds since 1970 (0 to {MAX_EPOCH_S}), got {shown(epoch)}",
                         source="SOURCE_DATE_EPOCH")
    return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.UTC).date().isoformat()


def _source(args, result) -> str:
    files = sorted({c.measurement.file for c in result.train})
    method = "" if args.method == METHODS[0] else f"; --method {args.method}"
    split = "" if args.split_by == SPLITS[0] else f" (--split-by {args.split_by})"
    return (f"accelsim calibrate on {len(result.train)} training records ({', '.join(files)}{_excluded(args)}); "
            f"{len(result.held_out)} held out{split}{method}; {args.fit_date}")


def refuse_overlay(name_or_path: str, name: str, flag: str) -> None:
    """A calibration overlay is not calibrated again: its published config is."""
    published = measured_config(name_or_path)
    if published != name:
        raise InputError(f"{shown(name)} is a calibrated overlay; calibrate the published config it extends "
                         f"({shown(published)})", source=flag)


def overlay_name(arch: str, output: str) -> str:
    """The overlay's ``name``: its file's stem, as every config is named (``-o
    calibrated/my-h100.yaml`` makes ``my-h100``, which ``--arch my-h100`` then reports)."""
    _, spec = load_arch_and_spec(arch)
    path = Path(output)
    if path.suffix.lower() != ".yaml" or not path.stem:
        raise InputError(f"expected NAME.yaml (configs are found by their name), got {shown(output)}", source="-o")
    name = path.stem
    if name == spec.name:
        raise InputError(f"the overlay would be named {shown(name)}, as the config it extends; name the file "
                         f"otherwise (e.g. {spec.name}-calibrated.yaml)", source="-o")
    if name in builtin_names() and not is_calibration(read_yaml(find_config(name))[0]):
        raise InputError(f"{shown(name)} is a published config's name: the overlay would pass for it; name the overlay "
                         f"otherwise (e.g. {spec.name}-calibrated.yaml)", source="-o")
    return name


def write_overlay(output: Path, header: str, overlay: dict) -> None:
    """Write a calibration overlay, refusing one that holds nothing fitted (no fitted value,
    no uncertainty band): it would be the published config under another name."""
    if not is_calibration(overlay):
        raise InputError("the fit moved nothing and no uncertainty band was written: no overlay to write (the records "
                         "do not determine the parameters asked for)", source="-o")
    write_text_atomic(output, header + yaml.safe_dump(overlay, sort_keys=False, width=100), "-o")


def _overlay_head(arch: str, what: str, output: str) -> dict:
    _, spec = load_arch_and_spec(arch)
    return {
        "schema_version": 1,
        "kind": "chip",
        "extends": spec.name,
        "name": overlay_name(arch, output),
        "display_name": f"{spec.display_name} (calibrated)",
        "description": f"{spec.name} {what}.",
    }


def _overlay(args, chip, result) -> dict:
    overlay = _overlay_head(args.arch, "with its calibratable parameters fitted by accelsim calibrate", args.output)
    note = f"train MAPE {mape(result.start_train_errors):.1%} -> {mape(result.train_errors):.1%}; " + (
        f"held-out MAPE {mape(result.start_held_out_errors):.1%} -> {mape(result.held_out_errors):.1%}"
        if len(result.held_out) else "no held-out records")
    for path, value in result.values.items():
        text = next(o.split("=", 1)[1] for o in result.overrides if o.startswith(path + "="))
        caveat = "".join(f"; {words}" for flag, words in (
            (path in result.held_by_prior, "held by the prior (the records hardly determine it)"),
            (path in result.at_bound, "at its search bound")) if flag)
        leaf = {"value": text if not _is_number(text) else float(text), "basis": "fitted",
                "source": _source(args, result),
                "note": f"value before fitting {_before(result, path)}; {note}{caveat}"}
        if args.scope:
            for family in args.scope:
                overlay.setdefault("family_values", {}).setdefault(family, {})[path] = dict(leaf)
            continue
        put(overlay, path.split("."), leaf)
    _given(args, result, overlay)
    errors = result.held_out_errors if len(result.held_out_errors) else result.train_errors
    cases = result.held_out if len(result.held_out_errors) else result.train
    split = "held-out" if len(result.held_out_errors) else "training (no held-out records)"
    bands = _bands(cases, errors, lambda family, count: f"{split} residuals of accelsim calibrate, {args.fit_date}")
    if bands:
        overlay["uncertainty"] = bands
    return overlay


def _given(args, result, overlay: dict) -> None:
    """The ``--set`` values the fit was made with, so that the overlay predicts what the
    fit did: marked as given, not fitted (a fitted value of the same field wins)."""
    published = load_raw(args.arch).data
    for text in args.overrides:
        override = parse_override(text)
        path = ".".join(override.path)
        if result is not None and path in result.values:
            continue
        node, target = overlay, published
        for part in override.path[:-1]:
            node = node.setdefault(part, {})
            target = target.get(part, {}) if isinstance(target, dict) else {}
        cited = isinstance(target, dict) and isinstance(target.get(override.path[-1]), dict) \
            and "value" in target[override.path[-1]]
        node[override.path[-1]] = ({"value": override.value, "basis": "override",
                                    "source": f"given to accelsim calibrate (--set {text.strip()}); {args.fit_date}"}
                                   if cited else override.value)


def _before(result, path: str) -> str:
    parameter = next(p for p in FITTABLE_PARAMETERS if p.path == path)
    return parameter.override(result.start[path]).split("=", 1)[1]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _header(result) -> str:
    return (f"# Written by `accelsim calibrate`: fitted values for {result.arch}, with what they were\n"
            f"# fitted on. Published numbers stay in the config this extends.\n")


def _print_summary(result, output: Path) -> None:
    print(f"fitted {', '.join(result.values) or 'nothing'} in {result.evaluations} evaluations"
          + (f"; not sensitive: {', '.join(result.skipped)}" if result.skipped else ""))
    for path, value in result.values.items():
        flags = [words for flag, words in ((path in result.held_by_prior, "held by the prior: the records hardly "
                                            "determine it"), (path in result.at_bound, "at its search bound"))
                 if flag]
        print(f"  {path}: {result.start[path]:.4g} -> {value:.4g}" + (f" ({'; '.join(flags)})" if flags else ""))
    if result.at_bound:
        print(f"warning: {', '.join(result.at_bound)} stopped at a search bound: the records ask for more than the "
              f"model allows there, so the overlay is unlikely to predict other kernels well", file=sys.stderr)
    print(f"train    MAPE {mape(result.start_train_errors):.1%} -> {mape(result.train_errors):.1%} ({len(result.train)} records)")
    if len(result.held_out):
        print(f"held-out MAPE {mape(result.start_held_out_errors):.1%} -> {mape(result.held_out_errors):.1%} ({len(result.held_out)} records)")
    print(f"wrote {output}")
