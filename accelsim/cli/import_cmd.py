"""``accelsim import FORMAT FILE... -o trace.json``: other tools' traces as system traces.

A format is an :class:`~accelsim.importers.Importer` in :data:`~accelsim.importers.IMPORTERS`;
this module gives each its subcommand, checks the output path, and validates and writes
what it built (:func:`write_imported`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import ValidationError

from accelsim.cli.arch_cmd import add_set_option
from accelsim.errors import InputError
from accelsim.files import check_output_file, write_text_atomic
from accelsim.importers import IMPORTERS, Imported, Importer
from accelsim.system.trace import SystemTrace, check_trace, save_system_trace


def register_nccl_tests(sub: argparse._SubParsersAction) -> None:
    from accelsim.network.collectives import KINDS
    from accelsim.validate.collectives import ALGORITHMS_RAN

    p = sub.add_parser("nccl-tests", help="nccl-tests output (all_reduce_perf ...) as collective measurements for "
                                          "accelsim calibrate --system")
    p.add_argument("files", nargs="+", metavar="LOG", help="what nccl-tests printed, one or more tests per file")
    p.add_argument("--system", required=True, help="the node config the runs were on (e.g. dgx-h100)")
    p.add_argument("-o", "--output", required=True, metavar="RECORDS.json", help="collective records to write")
    p.add_argument("--collective", choices=KINDS, help="the test, for logs older than nccl-tests 2.13 (which do not "
                                                       "print '# Collective test starting')")
    p.add_argument("--ranks", type=int, metavar="N", help="ranks per test, where the log lists each process as rank 0 "
                                                          "(nccl-tests built without MPI)")
    p.add_argument("--algorithm", choices=ALGORITHMS_RAN, default="auto",
                   help="what NCCL ran: auto (its own choice, the default), ring (NCCL_ALGO=Ring or NVLS off), nvls")
    p.set_defaults(run=run_nccl_tests, options_of_fields={"system": "--system"})


def run_nccl_tests(args: argparse.Namespace) -> int:
    from accelsim.arch.model import MAX_SYSTEM_CHIPS
    from accelsim.importers.nccl_tests import records
    from accelsim.arch.loader import measured_config
    from accelsim.validate.collectives import load_node, machine_of

    if args.ranks is not None and not 2 <= args.ranks <= MAX_SYSTEM_CHIPS:
        raise InputError(f"expected 2 to {MAX_SYSTEM_CHIPS} ranks, got {args.ranks}", source="--ranks")
    check_output_file(args.output, "-o", inputs=args.files)
    node = load_node(args.system)
    machine = machine_of(measured_config(args.system))  # records name the machine: dgx-h100, not its overlay
    found = records(args.files, machine, args.collective, args.algorithm, args.ranks, node.gpus)
    doc = {"format": "accelsim collective measurements", "version": 1,
           "fields": {"time_out_of_place_us / time_in_place_us": "nccl-tests columns",
                      "algorithm": "what ran: auto (NCCL's choice), ring (NCCL_ALGO=Ring or NVLS off), nvls"},
           "records": found}
    write_text_atomic(args.output, json.dumps(doc, indent=1) + "\n", "-o")
    tests = sorted({(r["collective"], r["ranks"]) for r in found})
    print(f"wrote {args.output}: {len(found)} records ({', '.join(f'{k} over {n} ranks' for k, n in tests)}) "
          f"on {machine}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="convert other tools' traces (Chakra, HLO) to a system trace, profiler traces "
                                      "to a measured step, or nccl-tests output to collective measurements")
    formats = p.add_subparsers(dest="import_format", required=True, parser_class=type(p), metavar="FORMAT")
    for name in IMPORTERS:
        add_importer(formats, IMPORTERS.get(name))
    register_nccl_tests(formats)


def add_importer(formats: argparse._SubParsersAction, importer: Importer) -> None:
    p = formats.add_parser(importer.name, help=importer.help)
    importer.add_arguments(p)
    if importer.what_if:
        add_set_option(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT.json", help=f"{importer.writes} to write")
    p.set_defaults(run=lambda args: run_importer(importer, args), options_of_fields=importer.options_of_fields)


def run_importer(importer: Importer, args: argparse.Namespace) -> int:
    inputs = list(importer.inputs(args))
    check_output_file(args.output, "-o", inputs=[*inputs, *importer.configs(args)])
    named = " ".join(map(str, inputs))
    with op_limits(named):
        imported = importer.convert(args)
    if imported.measured is None:
        write_imported(imported.trace, args.output, named, importer.hint)
    else:
        write_measured(imported, args.output, named, importer.hint)
    for note in imported.notes:
        print(note)
    return 0


@contextmanager
def op_limits(inputs: str) -> Iterator[None]:
    """An op the importer built that the trace format cannot hold (a size, count or time past
    its limits, a name it cannot print) is the input's fault: one line naming the inputs."""
    try:
        yield
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or exc.title
        raise InputError(f"an op imported from it has a {where!r} the trace format cannot hold ({first['msg']}; "
                         f"got {str(first.get('input'))[:40]!r})", source=inputs) from None


def check_imported(trace: SystemTrace, inputs: str, hint: str = "") -> None:
    """Check what an importer built as a reader would; a check that fails blames the
    ``inputs``, with ``hint``."""
    try:
        check_trace(trace)
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        raise InputError(f"the input does not make a valid system trace: {message}{hint}", source=inputs,
                         field=f"(imported) {field}") from None


def write_imported(trace: SystemTrace, output: str, inputs: str, hint: str = "") -> None:
    """Check what an importer built (:func:`check_imported`; the output is not written when
    it fails), then write it and say what it holds."""
    check_imported(trace, inputs, hint)
    save_system_trace(trace, output)
    written = sum(len(program.ops) for program in trace.programs)
    print(f"wrote {output}: {written} ops in {len(trace.programs)} programs on {trace.num_devices} devices "
          f"({trace.num_ops} over all devices)")


def write_measured(imported: Imported, output: str, inputs: str, hint: str = "") -> None:
    """A measured run's document, once the trace of its step checks."""
    check_imported(imported.trace, inputs, hint)
    write_text_atomic(output, json.dumps(imported.measured, indent=1, allow_nan=False) + "\n", "-o")
    device = imported.measured["device"]
    print(f"wrote {output}: measured step on {device.get('name')}" + (f" ({device['arch']})" if device.get("arch") else ""))
