"""``accelsim simulate --system ... --moe MODE``: one MoE dispatch (or combine, the same
traffic transposed) on a GPU system, with :mod:`accelsim.network.moe`."""

from __future__ import annotations

import argparse

from accelsim.arch.model import GpuChip, chip_of, kind_name, load_arch
from accelsim.cli.collective_cmd import promoted_note
from accelsim.cli.output import print_json, table
from accelsim.errors import InputError, shown
from accelsim.families.base import parse_assignments
from accelsim.network import build_topology
from accelsim.network.moe import MODES, ROUTING_FIELDS, MoeResult, load_matrix, routing_of, simulate_moe
from accelsim.units import format_quantity

OPTIONS_OF_FIELDS = {"mode": "--moe", "routing": "--routing", "sm_budget": "--sm-budget", "system": "--system"}
"""The options that give :func:`~accelsim.network.moe.simulate_moe`'s arguments."""

COLLECTIVE_ONLY = ("collective", "bytes", "sweep_bytes", "group", "ranks")


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--moe", metavar="MODE", help="a MoE dispatch on --system: " + ", ".join(MODES)
                   + " (docs/collectives.md, 'MoE all-to-all')")
    p.add_argument("--routing", action="append", default=[], metavar="NAME=VALUE",
                   help="the router's choices for --moe, per rank (repeatable): " + ", ".join(ROUTING_FIELDS)
                   + " (node_limit optional)")
    p.add_argument("--traffic", metavar="FILE", help='--moe nccl: a {"bytes": [[...]]} matrix of the bytes rank i '
                   "sends rank j, instead of --routing")
    p.add_argument("--sm-budget", type=int, metavar="N", help="SMs the --moe kernels hold (default: the mode's)")
    p.add_argument("--combine", action="store_true", help="--moe: the combine (the dispatch's traffic transposed)")


def check_not_moe(args: argparse.Namespace) -> None:
    """Refuse MoE options on anything but ``--moe``."""
    given = [flag for flag, value in (("--routing", args.routing), ("--traffic", args.traffic),
                                      ("--sm-budget", args.sm_budget), ("--combine", args.combine)) if value]
    if given:
        raise InputError(f"{', '.join(given)}: options of --moe MODE on --system", source="simulate")


def run_moe(args: argparse.Namespace) -> int:
    clashing = [f"--{name.replace('_', '-')}" for name in COLLECTIVE_ONLY if getattr(args, name)]
    if args.arch is not None or args.kernel or args.trace or args.param or args.timeline is not None:
        clashing.append("--arch, --kernel, --param, --timeline and a trace file")
    if args.algorithm != "auto":
        clashing.append("--algorithm")
    if clashing:
        raise InputError(f"--moe runs a MoE dispatch, which takes none of: {', '.join(clashing)}", source="simulate")
    if args.moe not in MODES:
        raise InputError(f"unknown MoE all-to-all mode {shown(args.moe)}; known: {', '.join(MODES)}", source="--moe")
    if (not args.routing) == (args.traffic is None):
        raise InputError("--moe needs the router's choices (--routing NAME=VALUE) or a --traffic FILE (one of them)",
                         source="simulate")
    system = load_arch(args.system, args.overrides)
    chip = chip_of(system)
    if not isinstance(chip, GpuChip):
        raise InputError(f"{system.name!r} is a {kind_name(system)} of {chip.name}: --moe simulates GPU kernels "
                         "(NCCL, DeepEP)", source="--system")
    topo = build_topology(system)
    routing = routing_of(parse_assignments(args.routing, "--routing")) if args.routing else None
    matrix = load_matrix(args.traffic, topo.ranks) if args.traffic is not None else None
    kind = "combine" if args.combine else "dispatch"
    result = simulate_moe(topo, args.moe, routing=routing, matrix=matrix, sm_budget=args.sm_budget,
                          device_sms=chip.num_cores, kind=kind,
                          hbm_bytes_per_s=chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency)
    note = promoted_note(args.system, topo.name)
    if args.json:
        print_json({"system": topo.name, "kind": kind, **result.as_dict(),
                    **({"system_note": note} if note else {})})
        return 0
    if note:
        print(f"# {note}")
    print_moe(result, topo.name, kind)
    return 0


def print_moe(r: MoeResult, system: str, kind: str) -> None:
    rows = [
        (f"MoE {kind}", f"{r.mode} over {r.ranks} ranks on {system}"),
        ("SM budget", str(r.sm_budget)),
        ("latency", format_quantity(r.latency_s, "seconds")),
        ("NVLink bytes", format_quantity(r.nvlink_bytes_per_rank, "bytes") + " per rank (the busiest)"),
        ("network bytes", format_quantity(r.network_bytes_per_rank, "bytes") + " per rank (the busiest)"),
        ("parts alone", ", ".join(f"{name} {format_quantity(seconds, 'seconds') if seconds else 0}" for name, seconds in (
            ("NVLink", r.times.nvlink_s), ("network", r.times.network_s), ("SM issue", r.times.issue_s),
            ("latencies", r.times.fixed_s), ("receive", r.times.receive_s)))),
    ]
    print(table(("", ""), rows).split("\n", 2)[2])
