"""``accelsim validate``: predicted vs measured for every record, as a Markdown report with plots."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace

from accelsim.arch.loader import measured_config
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.calibrate_cmd import check_jobs, chosen_parameters, select
from accelsim.cli.simulate_cmd import load_chip
from accelsim.errors import InputError
from accelsim.files import check_output_dir
from accelsim.validate.calibrate import SPLITS
from accelsim.validate.compare import compare, measurement_files
from accelsim.validate.fit_status import fit_record
from accelsim.validate.leave_one_out import leave_one_source_out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="compare predictions with measurements; write a report")
    p.add_argument("--arch", help="chip config (published or calibrated), for kernel measurements")
    p.add_argument("--system", help="node or cluster config (published or calibrated), for collective measurements "
                                    "(nccl-tests runs: accelsim import nccl-tests)")
    p.add_argument("--measurements", nargs="+", required=True, metavar="PATH")
    p.add_argument("--exclude", action="append", default=[], metavar="TEXT",
                   help="leave out records whose implementation contains TEXT (repeatable)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for report.md and plots")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes predicting records in parallel (default 1; the report is the same)")
    p.add_argument("--split-by", choices=SPLITS, default=None,
                   help="how the report labels records of files a fit used fitted or held-out, as calibrate --split-by "
                        "split them (record or kernel; default: what the calibrated config says it was fitted with)")
    p.add_argument("--leave-one-source-out", action="store_true",
                   help="also fit the --fit parameters on the microbenchmark-level records of every source but one, "
                        "and predict that source's records with them, for each source in turn (one fit per source)")
    p.add_argument("--fit", action="append", default=[], metavar="PATH",
                   help="with --leave-one-source-out: the parameters to fit (as calibrate --fit; default: calibrate's)")
    p.add_argument("--power", action="store_true",
                   help="the measurements are power readings (docs/power.md): report energy errors in DIR/power.md")
    add_set_option(p)
    p.set_defaults(run=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    from accelsim.report.validation import (  # matplotlib loads only when used
        REPORT_FILES,
        write_report,
    )
    check_jobs(args.jobs)
    if (args.arch is None) == (args.system is None):
        raise InputError("give --arch CHIP (kernel measurements) or --system NODE (collective measurements), one of "
                         "them", source="validate")
    if args.system is not None:
        return run_validate_system(args)
    if args.power:
        from accelsim.cli.power_cmd import run_validate_power

        return run_validate_power(args)
    if args.fit and not args.leave_one_source_out:
        raise InputError("--fit names what --leave-one-source-out fits; give both or neither", source="--fit")
    parameters = chosen_parameters(args.fit)
    out = check_output_dir(args.output, "-o", create=False, inputs=measurement_files(args.measurements),
                           writes=REPORT_FILES)
    chip = load_chip(args.arch, args.overrides)
    fitted = fit_record(args.arch)
    if args.split_by is not None:
        fitted = replace(fitted, split=args.split_by)
    measured_on = measured_config(args.arch)
    records = [_on(r, args.arch) for r in select(args.measurements, measured_on, args.exclude)]
    refused: list = []
    comparisons = compare(records, overrides=args.overrides, refused=refused, jobs=args.jobs)
    left_out = leave_one_source_out(records, args.arch, parameters, args.overrides, args.jobs,
                                    progress=lambda line: print(line, file=sys.stderr, flush=True)) \
        if args.leave_one_source_out else ()
    header = (f"{len(records)} records measured on `{measured_on}`, predicted with `{args.arch}`"
              + (f" and `--set {' '.join(args.overrides)}`" if args.overrides else "")
              + " (config=auto unless the record names its config).")
    if fitted.files:
        header += (f" Its fitted values were fitted on {', '.join(f'`{f}`' for f in sorted(fitted.files))}"
                   f" (split by {fitted.split}).")
    header += f" Regenerate: `{command_line(args)}`."
    path = write_report(comparisons, chip, out, header, refused, status=fitted.status, leave_one_out=left_out,
                        overrides=args.overrides)
    print(f"wrote {path} ({len(comparisons)} records" + (f"; {len(refused)} with a config the simulator refuses)" if refused else ")"))
    return 0


def command_line(args: argparse.Namespace) -> str:
    """The ``accelsim validate`` command that writes this report (what its header says)."""
    parts = ["accelsim validate --arch", args.arch, "--measurements", *args.measurements]
    parts += [f"--exclude {shlex.quote(text)}" for text in args.exclude]
    parts += [f"--set {shlex.quote(o)}" for o in args.overrides]
    if args.split_by is not None:
        parts += ["--split-by", args.split_by]
    if args.leave_one_source_out:
        parts += ["--leave-one-source-out", *(f"--fit {p}" for p in args.fit)]
    return " ".join([*parts, "-o", args.output])


def _on(record, arch: str):
    """The record, to be predicted on ``arch`` (e.g. a calibrated overlay of its chip)."""
    return replace(record, arch=arch)


def run_validate_system(args: argparse.Namespace) -> int:
    """``validate --system``: every collective record of the node or cluster, predicted with
    its NCCL model (each record on the machine its ``overrides`` make, e.g. its node count)."""
    from accelsim.arch.model import load_arch
    from accelsim.network import build_topology
    from accelsim.report.collectives import REPORT_FILES, CollectiveComparison, write_collective_report
    from accelsim.validate.collectives import load_system, machine_of, node_records, predict

    if args.split_by not in (None, "record"):
        raise InputError("collective records are held out by their ids only", source="--split-by")
    out = check_output_dir(args.output, "-o", create=False, inputs=measurement_files(args.measurements),
                           writes=REPORT_FILES)
    system = load_system(args.system, args.overrides)
    measured_on = machine_of(measured_config(args.system))
    records = node_records(args.measurements, system, measured_on, args.exclude)
    topologies = {}
    comparisons = []
    for m in records:
        if m.overrides not in topologies:
            topologies[m.overrides] = build_topology(load_arch(args.system, [*args.overrides, *m.overrides]))
        r = predict(topologies[m.overrides], m)
        comparisons.append(CollectiveComparison(m, r.latency_s, r.algorithm, r.protocol, r.busbw_bytes_per_s))
    header = (f"{len(records)} collective records measured on `{measured_on}`, predicted with `{args.system}`"
              + (f" (`{system.name}`)" if system.name != args.system else "")
              + (f" and `--set {' '.join(args.overrides)}`" if args.overrides else "")
              + " (NCCL's own choice where the record says `auto`, a ring where it says NCCL ran one; a record's "
                "own `overrides` make the measured machine). Train and held-out as `accelsim calibrate --system` "
                "splits them (a hash of each record's id).")
    path = write_collective_report(comparisons, system.name, out, header)
    print(f"wrote {path} ({len(comparisons)} records)")
    return 0
