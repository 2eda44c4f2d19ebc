"""``accelsim import FORMAT FILE... -o trace.json``: other tools' traces as system traces.

Adding a format is one function: write ``register_<format>(sub)`` that adds a parser to
``sub`` (the subparsers of ``import``) with ``set_defaults(run=...)``, and append it to
:data:`IMPORTERS`. Its run function builds a :class:`~accelsim.system.trace.SystemTrace`
and calls :func:`write_imported` (validates, writes atomically, prints one line).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import ValidationError

from accelsim.cli.arch_cmd import add_set_option
from accelsim.errors import InputError
from accelsim.files import check_output_file
from accelsim.system.trace import SystemTrace, check_trace, save_system_trace


def register_chakra(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chakra", help="MLCommons Chakra execution traces (JSON form of et_def.proto), one file per rank")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="one trace per rank, or a folder of them: ranks follow the numbers in the file names "
                        "(rank0.json ... rank11.json) when every name has its own, else the order given")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json", help="system trace to write")
    p.add_argument("--group", action="append", default=[], metavar="NAME=RANKS",
                   help="ranks of a process group that nodes name in pg_name, e.g. tp0=0-3 (repeatable)")
    p.set_defaults(run=run_chakra)


def run_chakra(args: argparse.Namespace) -> int:
    from accelsim.importers.chakra import import_chakra, parse_group_option, rank_files

    files, renumbered = rank_files(args.files)
    check_output_file(args.output, "-o", inputs=files)
    groups: dict[str, list[int]] = {}
    for text in args.group:
        name, ranks = parse_group_option(text)
        if name in groups:
            raise InputError(f"process group {name!r} is given twice", source="--group")
        if len(set(ranks)) != len(ranks):
            raise InputError(f"process group {name!r} names a rank twice: {text!r}", source="--group")
        past = [r for r in ranks if r >= len(files)]
        if past:
            raise InputError(f"process group {name!r} names rank {past[0]}, but there are {len(files)} rank "
                             f"files (ranks 0-{len(files) - 1})", source="--group")
        groups[name] = ranks
    with op_limits(" ".join(map(str, files))):
        trace = import_chakra(files, groups)
    write_imported(trace, args.output, " ".join(map(str, files)),
                   " (give one file per rank, in rank order, and every --group's ranks)")
    if renumbered:
        print(f"ranks from the file names: {', '.join(f'{r}={f.name}' for r, f in enumerate(files[:4]))}"
              + (f", ... {len(files) - 1}={files[-1].name}" if len(files) > 4 else ""))
    return 0


def register_hlo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hlo", help="scheduled XLA HLO text (jit(f).lower(...).compile().as_text() or an HLO dump)")
    p.add_argument("file", metavar="FILE", help="HLO module text")
    p.add_argument("--system", required=True, help="system the trace is for: the module's devices must fit it")
    add_set_option(p)
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json", help="system trace to write")
    p.add_argument("--max-ops", type=int, default=None, metavar="N",
                   help="unroll while loops up to N ops in all, fold them into scaled ops beyond (default: 20000)")
    p.set_defaults(run=run_hlo)


MAX_UNROLLED_OPS = 1_000_000
"""The most ops ``--max-ops`` may unroll loops into: a trace of a million ops replays in
minutes; past that, loops are folded into scaled ops."""


def run_hlo(args: argparse.Namespace) -> int:
    from accelsim.arch.model import config_files, load_arch
    from accelsim.importers.hlo import DEFAULT_MAX_OPS, BranchRates, describe_counts, import_hlo
    from accelsim.network import build_topology
    from accelsim.system.replay import chip_of

    if args.max_ops is not None and not 1 <= args.max_ops <= MAX_UNROLLED_OPS:
        raise InputError(f"expected an op count from 1 to {MAX_UNROLLED_OPS:,}, got {args.max_ops}", source="--max-ops")
    check_output_file(args.output, "-o", inputs=[args.file, *config_files(args.system)])
    system = load_arch(args.system, args.overrides)
    chip = chip_of(system)
    rates = {"matrix": set(chip.matrix.flops_per_cycle_per_core), "vector": set(chip.vector.flops_per_cycle_per_core)}
    table = chip.matrix.flops_per_cycle_per_core
    peak = chip.matrix_flops_per_s("bf16" if "bf16" in table else max(table, key=table.get))
    links = chip.link_bandwidth_bytes_per_s or chip.hbm.bandwidth_bytes_per_s  # a chip without scale-up links
    branch_rates = BranchRates(flop_s=1 / peak, byte_s=1 / chip.hbm.bandwidth_bytes_per_s, comm_byte_s=1 / links)
    with op_limits(args.file):
        trace = import_hlo(args.file, system_devices=build_topology(system).ranks, system=args.system,
                           unit_dtypes=rates, max_ops=args.max_ops or DEFAULT_MAX_OPS, rates=branch_rates)
    write_imported(trace, args.output, args.file)
    print(f"estimated or skipped: {describe_counts(trace.metadata['importer_counts'])}")
    return 0


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
    p.set_defaults(run=run_nccl_tests)


def run_nccl_tests(args: argparse.Namespace) -> int:
    import json

    from accelsim.arch.model import MAX_SYSTEM_CHIPS
    from accelsim.files import write_text_atomic
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


IMPORTERS = [register_chakra, register_hlo, register_nccl_tests]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="convert other tools' traces (Chakra, HLO) to a system trace, or nccl-tests "
                                      "output to collective measurements")
    formats = p.add_subparsers(dest="import_format", required=True, parser_class=type(p), metavar="FORMAT")
    for add in IMPORTERS:
        add(formats)


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


def write_imported(trace: SystemTrace, output: str, inputs: str, hint: str = "") -> None:
    """Check what an importer built as a reader would, then write it and say what it holds.
    A check that fails blames the ``inputs`` (the output is not written), with ``hint``."""
    try:
        check_trace(trace)
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        raise InputError(f"the input does not make a valid system trace: {message}{hint}", source=inputs,
                         field=f"(imported) {field}") from None
    save_system_trace(trace, output)
    written = sum(len(program.ops) for program in trace.programs)
    print(f"wrote {output}: {written} ops in {len(trace.programs)} programs on {trace.num_devices} devices "
          f"({trace.num_ops} over all devices)")
