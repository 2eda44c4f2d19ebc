"""``accelsim simulate --system ... --collective ...``: one collective, or a size sweep
printed like nccl-tests."""

from __future__ import annotations

import argparse
import re
import time

from accelsim.arch.model import load_arch
from accelsim.cli.output import print_json, table
from accelsim.errors import InputError, shown
from accelsim.network import build_topology, simulate_collective
from accelsim.network.collectives import ALGORITHMS, KINDS
from accelsim.results import CollectiveResult
from accelsim.units import MAX_EXACT_BYTES, UnitError, format_quantity, parse_quantity


OPTIONS_OF_FIELDS = {"kind": "--collective", "size_bytes": "--bytes", "algorithm": "--algorithm", "ranks": "--ranks",
                     "group": "--group", "system": "--system"}
"""The options that give :func:`~accelsim.network.simulate_collective`'s arguments: its
errors name the argument, the command line the option."""


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--system", help="system name or config path (node, cluster, torus, multislice) for --collective")
    p.add_argument("--collective", metavar="KIND", help=", ".join(KINDS))
    p.add_argument("--bytes", metavar="SIZE", help="buffer size as nccl-tests counts it, e.g. '64 MiB', or nccl-tests' own 64M (powers of 1024)")
    p.add_argument("--sweep-bytes", metavar="MIN:MAX", help="sizes from MIN to MAX, doubling (e.g. 8B:8GiB, or nccl-tests' 8:8G)")
    p.add_argument("--algorithm", default="auto",
                   help="auto (default), " + ", ".join(sorted(ALGORITHMS)) + "; NAME/PROTOCOL (ring/ll) fixes the NCCL protocol")
    p.add_argument("--ranks", type=int, help="use the first N ranks of the system (default: all)")
    p.add_argument("--group", metavar="RANKS", help="explicit ranks, e.g. 0,2,4,6 or 0-7 (send-recv: SRC,DST)")


def run_collective(args: argparse.Namespace) -> int:
    if args.arch is not None or args.kernel or args.trace or args.param or args.timeline is not None:
        raise InputError("--system runs a collective; --arch, --kernel, --param, --timeline and a trace file "
                         "are for kernels",
                         source="simulate")
    if not args.collective:
        raise InputError("--system needs --collective KIND", source="simulate")
    if (args.bytes is None) == (args.sweep_bytes is None):
        raise InputError("give --bytes SIZE or --sweep-bytes MIN:MAX (one of them)", source="simulate")
    topo = build_topology(load_arch(args.system, args.overrides))
    sizes = [parse_size(args.bytes, "--bytes")] if args.bytes is not None else sweep_sizes(args.sweep_bytes)
    started = time.perf_counter()
    if args.group is not None and args.ranks:
        raise InputError("give --ranks N or --group RANKS, not both", source="simulate")
    group = parse_group(args.group, topo.ranks) if args.group is not None else None
    results = [simulate_collective(topo, args.collective, s, args.algorithm, args.ranks, group) for s in sizes]
    wall_s = time.perf_counter() - started
    note = promoted_note(args.system, topo.name)
    if args.json:
        rows = [dict(r.to_json(), **({"system_note": note} if note else {})) for r in results]
        print_json(rows[0] if args.bytes else rows)
        return 0
    if note:
        print(f"# {note}")
    if args.bytes:
        print_one(results[0], topo.name)
    else:
        print_sweep(results, topo.name, wall_s)
    return 0


def promoted_note(given: str, resolved: str) -> str:
    """Where a plain system name gives its fitted overlay (``dgx-h100`` is
    ``dgx-h100-calibrated``), say so, and name the config of the published figures."""
    if given == resolved or given.endswith((".yaml", ".yml")) or "/" in given:
        return ""
    from accelsim.arch.loader import measured_config

    return (f"{given} is {resolved}: its NCCL model fitted on nccl-tests, or carried from a fitted node "
            f"(docs/collectives.md); the published "
            f"figures alone are {measured_config(given)}")


def parse_group(text: str, size: int) -> list[int]:
    """``0,2,4`` or ``0-7`` or a mix (``0-3,8-11``), each rank below ``size`` (checked
    before a range is expanded)."""
    ranks = []
    for item in text.split(","):
        low, dash, high = item.strip().partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise InputError(f"expected rank numbers or ranges like 0-7, got {shown(item.strip())}", source="--group") from None
        if first > last:
            raise InputError(f"range {shown(item.strip())} runs backwards", source="--group")
        if last >= size:
            raise InputError(f"rank {last} is past the system's {size} ranks (0-{size - 1})", source="--group")
        ranks.extend(range(first, last + 1))
    return ranks


NCCL_TESTS_SIZE = re.compile(r"(\d{1,20})\s*([KMGT]?)", re.IGNORECASE)
"""A size as nccl-tests' ``-b`` / ``-e`` take it: bytes, or K, M, G (and T) as powers of 1024."""


def parse_size(text: str, option: str) -> float:
    """A size with a unit (``64 MiB``, ``1 GB``), or as nccl-tests writes it (``8``,
    ``64M`` = 64 MiB)."""
    plain = NCCL_TESTS_SIZE.fullmatch(text.strip())
    if plain:
        count = int(plain[1]) * 1024 ** " KMGT".index(plain[2].upper() or " ")
        value = float(min(count, 2 * MAX_EXACT_BYTES))  # past 8 PiB is refused below (and would overflow a float)
    else:
        try:
            value = parse_quantity(text.strip(), "bytes")
        except UnitError as exc:
            raise InputError(f"{exc}; or nccl-tests' 8, 64K, 8G (powers of 1024)", source=option) from None
    if not 1 <= value <= MAX_EXACT_BYTES or not float(value).is_integer():
        raise InputError(f"size must be a whole number of bytes from 1 B to 8 PiB, got {shown(text)}", source=option)
    return value


def sweep_sizes(text: str) -> list[float]:
    low_text, sep, high_text = text.partition(":")
    if not sep:
        raise InputError(f"expected MIN:MAX (e.g. 8B:8GiB), got {shown(text)}", source="--sweep-bytes")
    low, high = parse_size(low_text, "--sweep-bytes"), parse_size(high_text, "--sweep-bytes")
    if high < low:
        raise InputError(f"MAX is below MIN in {shown(text)}", source="--sweep-bytes")
    sizes = []
    size = low
    while size <= high:
        sizes.append(size)
        size *= 2
    return sizes


def print_one(r: CollectiveResult, system: str) -> None:
    rows = [
        ("collective", f"{r.kind} over {r.ranks} ranks on {system}"),
        ("size", format_quantity(r.size_bytes, "bytes")),
        ("algorithm", f"{r.algorithm} ({r.protocol})" if r.protocol else r.algorithm),
        ("latency", format_quantity(r.latency_s, "seconds")),
        ("algbw", format_quantity(r.algbw_bytes_per_s, "bytes_per_s")),
        ("busbw", format_quantity(r.busbw_bytes_per_s, "bytes_per_s")),
    ]
    print(table(("", ""), rows).split("\n", 2)[2])


def print_sweep(results: list[CollectiveResult], system: str, wall_s: float) -> None:
    first = results[0]
    print(f"# {first.kind} over {first.ranks} ranks on {system}")
    rows = [
        (f"{int(r.size_bytes)}", f"{r.algorithm}/{r.protocol}" if r.protocol else r.algorithm, f"{r.latency_s * 1e6:.2f}",
         f"{r.algbw_bytes_per_s / 1e9:.2f}", f"{r.busbw_bytes_per_s / 1e9:.2f}")
        for r in results
    ]
    print(table(("size (B)", "algorithm", "time (us)", "algbw (GB/s)", "busbw (GB/s)"), rows))
    print(f"# {len(results)} sizes simulated in {wall_s * 1e3:.1f} ms")
