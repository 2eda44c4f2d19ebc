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
from accelsim.errors import InputError, located_at_option
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
    add_step_options(p)
    add_set_option(p)
    p.set_defaults(run=run_validate, options_of_fields={"arch": "--arch", "system": "--system", "measurements": "--measurements",
                                                       "step_device": "--step-device"})


def add_step_options(p: argparse.ArgumentParser) -> None:
    """A measured step among the measurements (``accelsim import profile``) is also replayed
    beside the measurement: these say what to replay."""
    p.add_argument("--step-trace", metavar="TRACE.json",
                   help="with a measured step: replay this system trace of the same program (accelsim import hlo or "
                        "chakra) instead of the step's own kernels, pairing ops and kernels by name")
    p.add_argument("--step-system", metavar="SYSTEM", help="with --step-trace: the system it replays on (default: the "
                                                           "--arch chip as one device)")
    p.add_argument("--step-device", type=int, default=0, metavar="N",
                   help="with --step-trace: the trace's device the measured step ran as (default 0)")


def run_validate(args: argparse.Namespace) -> int:
    from accelsim.report.step import STEP_FILES
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
    steps = steps_to_compare(args)
    step_replay = step_replay_inputs(args) if steps else (None, None)
    out = check_output_dir(args.output, "-o", create=False, inputs=measurement_files(args.measurements),
                           writes=REPORT_FILES + (STEP_FILES if steps else ()))
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
    for file, step in steps:
        write_step(args, chip, out, file, step, *step_replay)
    return 0


def steps_to_compare(args: argparse.Namespace) -> list[tuple[str, dict]]:
    """The measured steps among ``--measurements`` measured on ``--arch``'s chip (at most one
    per report); the step options without one are refused."""
    from accelsim.validate.step import measured_steps

    if args.step_device < 0:
        raise InputError(f"expected a device index of 0 or more, got {args.step_device}", source="--step-device")
    measured_on = measured_config(args.arch)
    steps = [(f, s) for f, s in measured_steps(args.measurements) if s.get("device", {}).get("arch") == measured_on]
    if len(steps) > 1:
        raise InputError(f"{len(steps)} measured steps of {measured_on} ({steps[0][0]}, {steps[1][0]}, ...): give one per "
                         "report", source="--measurements")
    if (args.step_trace or args.step_system) and not steps:
        raise InputError(f"no measured step of {measured_on} among the measurements (accelsim import profile makes "
                         "one)", source="--step-trace" if args.step_trace else "--step-system")
    if args.step_system and not args.step_trace:
        raise InputError("--step-system names where --step-trace replays; give both or neither", source="--step-system")
    return steps


def step_replay_inputs(args: argparse.Namespace) -> tuple:
    """The ``--step-trace`` and ``--step-system`` a measured step replays on (None, None: its
    own kernels on its chip), loaded and checked (``--step-device``) before any record is
    predicted, so that a bad one is refused at once."""
    from accelsim.arch.model import load_arch
    from accelsim.system.trace import load_system_trace
    from accelsim.validate.step import check_step_device

    if not args.step_trace:
        return None, None
    trace = load_system_trace(args.step_trace)
    try:
        check_step_device(trace, args.step_device)
    except InputError as exc:
        raise located_at_option(exc, {"step_device": "--step-device"}) from None
    return trace, load_arch(args.step_system, args.overrides) if args.step_system else None


def write_step(args: argparse.Namespace, chip, out, file: str, step: dict, trace=None, system=None) -> None:
    """The measured step beside its replay (:mod:`accelsim.validate.step`) on ``trace`` and
    ``system`` (:func:`step_replay_inputs`): ``step.md``, the Perfetto file of both timelines
    and the kernels' plot."""
    from accelsim.report.step import write_step_report
    from accelsim.validate.step import compare_step

    try:
        comparison = compare_step(step, file, chip, trace=trace, system=system, device=args.step_device)
    except InputError as exc:
        located_at_option(exc, {"step_device": "--step-device"})  # the one field an option gave
        exc.source = exc.source or args.step_trace or file
        raise
    path = write_step_report(comparison, out, command_line(args))
    print(f"wrote {path}: measured {comparison.measured.step_s * 1e6:.1f} us, replayed "
          f"{comparison.simulated.step_s * 1e6:.1f} us ({comparison.error:+.1%}; most of the difference: "
          f"{comparison.dominant}), and step.perfetto.json with both timelines")


def command_line(args: argparse.Namespace) -> str:
    """The ``accelsim validate`` command that writes this report (what its header says)."""
    parts = ["accelsim validate --arch", args.arch, "--measurements", *args.measurements]
    parts += [f"--exclude {shlex.quote(text)}" for text in args.exclude]
    parts += [f"--set {shlex.quote(o)}" for o in args.overrides]
    if args.split_by is not None:
        parts += ["--split-by", args.split_by]
    if args.leave_one_source_out:
        parts += ["--leave-one-source-out", *(f"--fit {p}" for p in args.fit)]
    if args.step_trace:
        parts += ["--step-trace", args.step_trace, *(["--step-system", args.step_system] if args.step_system else []),
                  *(["--step-device", str(args.step_device)] if args.step_device else [])]
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
