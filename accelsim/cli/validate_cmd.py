"""``accelsim validate``: predicted vs measured for every record, as a Markdown report with plots."""

from __future__ import annotations

import argparse
from dataclasses import replace

from accelsim.arch.loader import measured_config
from accelsim.arch.model import load_arch_and_spec
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.calibrate_cmd import check_jobs, select
from accelsim.cli.simulate_cmd import load_chip
from accelsim.errors import InputError
from accelsim.files import check_output_dir
from accelsim.validate.calibrate import SPLITS
from accelsim.validate.compare import compare, measurement_files


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
                   help="how the report labels records train or held-out, as calibrate --split-by split them "
                        "(record or kernel; default: what the calibrated config says it was fitted with, else record)")
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
    out = check_output_dir(args.output, "-o", create=False, inputs=measurement_files(args.measurements),
                           writes=REPORT_FILES)
    chip = load_chip(args.arch, args.overrides)
    if args.split_by is None:
        args.split_by = fitted_split(args.arch, args.overrides)
    measured_on = measured_config(args.arch)
    records = select(args.measurements, measured_on, args.exclude)
    refused: list = []
    comparisons = compare([_on(r, args.arch) for r in records], overrides=args.overrides, refused=refused,
                          jobs=args.jobs)
    header = (f"{len(records)} records measured on `{measured_on}`, predicted with `{args.arch}`"
              + (f" and `--set {' '.join(args.overrides)}`" if args.overrides else "")
              + " (config=auto unless the record names its config).")
    if args.split_by != SPLITS[0]:
        header += f" Train and held-out as `accelsim calibrate --split-by {args.split_by}` splits them."
    path = write_report(comparisons, chip, out, header, refused, split=args.split_by)
    print(f"wrote {path} ({len(comparisons)} records" + (f"; {len(refused)} with a config the simulator refuses)" if refused else ")"))
    return 0


def fitted_split(arch: str, overrides) -> str:
    """The split a calibrated config was fitted with: ``kernel`` when its fitted values'
    sources say ``--split-by kernel`` (calibrate writes that), else ``record``."""
    _, spec = load_arch_and_spec(arch, overrides)
    return "kernel" if "(--split-by kernel)" in spec.model_dump_json() else SPLITS[0]


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
