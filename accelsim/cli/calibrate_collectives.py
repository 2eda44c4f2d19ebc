"""``accelsim calibrate --system NODE``: fit a node's NCCL model (its ``collectives``
section) to collective measurements and write an overlay that extends the node.

The records are nccl-tests runs converted by ``accelsim import nccl-tests``, files in
the form of ``validation/collectives/*.json``, or ``validation/measure_collectives.py``'s
measurement files. The fit is :func:`accelsim.validate.collectives.fit`: the same robust
loss on log time error as kernel calibration, on the records the fixed hash of their ids
puts in training (about 3 in 10 are held out and only reported).
"""

from __future__ import annotations

import argparse

from accelsim.arch.model import config_files
from accelsim.errors import InputError
from accelsim.files import check_output_file
from accelsim.validate.calibrate import mape
from accelsim.validate.collectives import (
    PARAMETERS, fit, fitted_leaves, load_node, log_errors, node_records, overlay, split,
)
from accelsim.validate.compare import measurement_files

KERNEL_ONLY = (("scope", "--scope"), ("bands_only", "--bands-only"))


def chosen(paths: list[str]):
    """``--fit`` names as config paths (``collectives.nvls_latency``) or without the section."""
    known = {p.path: p for p in PARAMETERS}
    out = []
    for text in paths:
        path = text.removeprefix("collectives.")
        if path not in known:
            raise InputError(f"not a calibratable collectives field; expected one of: "
                             f"{', '.join('collectives.' + k for k in known)}", source="--fit", field=text)
        out.append(known[path])
    return out or list(PARAMETERS)


def run_calibrate_system(args: argparse.Namespace) -> int:
    from accelsim.cli.calibrate_cmd import fit_date, overlay_name, refuse_overlay, write_overlay

    for attr, flag in KERNEL_ONLY:
        if getattr(args, attr):
            raise InputError(f"{flag} applies to kernel calibration (--arch)", source=flag)
    if args.split_by != "record":
        raise InputError("collective records are held out by their ids only", source="--split-by")
    node = load_node(args.system, args.overrides)
    if node.collectives is None:
        raise InputError(f"{node.name!r} has no 'collectives' section (an NCCL model) to fit", source="--system")
    refuse_overlay(args.system, node.name, "--system")
    parameters = [p for p in chosen(args.fit) if p.get(node.collectives) is not None]
    if not parameters:
        raise InputError(f"{node.name!r} has none of the fields named", source="--fit")
    records = node_records(args.measurements, node, node.name, args.exclude, fitted_only=True)
    train, held_out = split(records)
    if not train:
        raise InputError(f"all {len(records)} records fall in the held-out split (a hash of each id, about 3 in 10); "
                         f"a fit needs training records: give more", source="--measurements")
    output = check_output_file(args.output, "-o", inputs=[*config_files(args.system),
                                                          *measurement_files(args.measurements)])
    name = overlay_name(args.system, args.output)
    date = fit_date()
    print(f"calibrating {node.name}'s collectives on {len(records)} records ...")
    result = fit(records, node, parameters)
    before = [mape(log_errors(cases, node)) for cases in (train, held_out)]
    after = [mape(log_errors(cases, result.node)) for cases in (train, held_out)]
    files = sorted({str(f) for f in measurement_files(args.measurements)})
    source = (f"accelsim calibrate --system on {len(train)} training records ({', '.join(files)}); "
              f"{len(held_out)} held out; {date}")
    note = f"train MAPE {before[0]:.1%} -> {after[0]:.1%}" + (
        f"; held-out MAPE {before[1]:.1%} -> {after[1]:.1%}" if held_out else "; no held-out records")
    leaves = fitted_leaves(result, parameters, source, note)
    written = overlay(node.name, node.display_name, leaves, name=name,
                      description=f"{node.name} with its NCCL model fitted by accelsim calibrate --system.")
    header = (f"# Written by `accelsim calibrate --system`: the NCCL model of {node.name} fitted on collective\n"
              f"# measurements, with what each value was fitted on. Published numbers stay in the config this extends.\n")
    write_overlay(output, header, written)
    print(f"fitted {', '.join(result.values) or 'nothing'} in {result.evaluations} evaluations")
    for path, value in result.values.items():
        print(f"  collectives.{path}: {result.start[path]:.4g} -> {value:.4g}")
    print(f"train    MAPE {before[0]:.1%} -> {after[0]:.1%} ({len(train)} records, time)")
    if held_out:
        print(f"held-out MAPE {before[1]:.1%} -> {after[1]:.1%} ({len(held_out)} records, time)")
    print(f"wrote {output}")
    return 0
