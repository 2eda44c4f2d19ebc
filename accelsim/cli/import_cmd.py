"""``accelsim import FORMAT FILE... -o trace.json``: other tools' traces as system traces.

Adding a format is one function: write ``register_<format>(sub)`` that adds a parser to
``sub`` (the subparsers of ``import``) with ``set_defaults(run=...)``, and append it to
:data:`IMPORTERS`. Its run function builds a :class:`~accelsim.system.trace.SystemTrace`
and calls :func:`write_imported` (validates, writes atomically, prints one line).
"""

from __future__ import annotations

import argparse

from accelsim.system.trace import SystemTrace, check_trace, save_system_trace
from accelsim.errors import InputError


def register_chakra(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chakra", help="MLCommons Chakra execution traces (JSON form of et_def.proto), one file per rank")
    p.add_argument("files", nargs="+", metavar="FILE", help="one trace per rank, in rank order")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json", help="system trace to write")
    p.set_defaults(run=run_chakra)


def run_chakra(args: argparse.Namespace) -> int:
    from accelsim.importers.chakra import import_chakra

    write_imported(import_chakra(args.files), args.output)
    return 0


IMPORTERS = [register_chakra]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="convert other tools' traces (Chakra, ...) to a system trace")
    formats = p.add_subparsers(dest="import_format", required=True, parser_class=type(p), metavar="FORMAT")
    for add in IMPORTERS:
        add(formats)


def write_imported(trace: SystemTrace, output: str) -> None:
    """Check what an importer built as a reader would, then write it and say what it holds."""
    try:
        check_trace(trace)
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        raise InputError(f"the importer built an invalid trace: {message}", source=output, field=field) from None
    save_system_trace(trace, output)
    print(f"wrote {output}: {trace.num_ops} ops on {trace.num_devices} devices in {len(trace.programs)} programs")
