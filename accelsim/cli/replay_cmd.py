"""``accelsim replay TRACE.json --system SYSTEM``: one step of a system trace on a system."""

from __future__ import annotations

import argparse
from pathlib import Path

from accelsim.arch.model import config_files, load_arch
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.output import print_json, table
from accelsim.errors import InputError
from accelsim.files import check_output_file, write_json
from accelsim.importers.hlo_estimates import EstimateComparison, compare_with_xla
from accelsim.network.collectives import get_algorithm
from accelsim.results import StepResult
from accelsim.system.replay import ReplayOptions, chip_of, parse_roofline_overhead, replay
from accelsim.system.timeline import chrome_trace
from accelsim.system.trace import load_system_trace
from accelsim.units import format_quantity

TOP_LINKS = 5


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a system trace (one step on every device) on a system")
    p.add_argument("trace", metavar="TRACE.json", help="a system trace (see docs/system-trace-format.md)")
    p.add_argument("--system", required=True, help="system name or config path (a node, torus, cluster, multislice)")
    add_set_option(p)
    p.add_argument("--algorithm", default="auto", help="collective algorithm for every collective (default: auto)")
    p.add_argument("--no-fold", dest="fold", action="store_false",
                   help="replay every device on its own (default: interchangeable devices of a program together)")
    p.add_argument("--comm-sm-fraction", type=float, metavar="F",
                   help="share of a GPU's SMs a running collective takes from compute (default: 16 / SMs)")
    p.add_argument("--comm-hbm-fraction", type=float, metavar="F",
                   help="share of HBM bandwidth a running collective takes from memory-bound compute "
                        "(default: each its own, 2 x its bus bandwidth / HBM bandwidth)")
    p.add_argument("--roofline-overhead", metavar="TIME", default="0 us",
                   help="fixed cost added to every roofline compute op, e.g. '2 us' for eagerly launched GPU "
                        "kernels (default '0 us', as in a CUDA graph; family and kernel-trace ops already include "
                        "the chip's launch overhead)")
    p.add_argument("--wait-at-first-use", action="store_true",
                   help="a what-if on the schedule: wait for each async collective at the first op that uses its "
                        "result, not at its done (the overlap the dependencies allow; docs/replay.md)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timeline", metavar="FILE", help="write a Chrome trace-event JSON timeline (Perfetto)")
    p.set_defaults(run=run_replay, options_of_fields={
        "algorithm": "--algorithm", "system": "--system", "comm_sm_fraction": "--comm-sm-fraction",
        "comm_hbm_fraction": "--comm-hbm-fraction"})


def run_replay(args: argparse.Namespace) -> int:
    if args.timeline is not None:
        check_output_file(args.timeline, "--timeline", inputs=[args.trace, *config_files(args.system)])
    if args.algorithm != "auto":
        get_algorithm(args.algorithm)  # an unknown name is the option's fault, not the trace's
    trace = load_system_trace(args.trace)
    if args.timeline is not None:  # nor over a kernel trace the system trace names
        base = Path(args.trace).parent
        named = {op.kernel_trace for program in trace.programs for op in program.ops if op.kernel_trace}
        check_output_file(args.timeline, "--timeline", inputs=[p if Path(p).is_absolute() else base / p for p in named])
    system = load_arch(args.system, args.overrides)
    chip = chip_of(system)  # a chip is the option's fault, not the trace's
    protocol = args.algorithm.partition("/")[2]
    if protocol:  # known on this system? (asked now: a trace without collectives would never ask)
        from accelsim.network import build_topology
        from accelsim.network.collectives import protocol_named

        protocol_named(build_topology(system), protocol)
    options = ReplayOptions(
        fold=args.fold, algorithm=args.algorithm, comm_sm_fraction=args.comm_sm_fraction,
        comm_hbm_fraction=args.comm_hbm_fraction, timeline=bool(args.timeline),
        roofline_overhead_s=parse_roofline_overhead(args.roofline_overhead, "--roofline-overhead"),
        wait_at_first_use=args.wait_at_first_use,
    )
    try:
        result = replay(trace, system, base_dir=Path(args.trace).parent, options=options)
    except InputError as exc:
        exc.source = exc.source or args.trace  # the replay names fields of the trace
        raise
    xla = compare_with_xla(trace, chip, Path(args.trace).parent, options.roofline_overhead_s)
    if args.timeline:
        write_json(args.timeline, chrome_trace(result), "--timeline")
    if args.json:
        print_json(result.result().to_json() | ({"xla_estimate": xla.to_json()} if xla else {}))
    else:
        print_result(result.result())
        if xla:
            print_xla_estimate(xla)
    return 0


def print_result(r: StepResult) -> None:
    seconds = lambda value: format_quantity(value, "seconds")  # noqa: E731
    rows = [
        ("trace", f"{r.trace} ({r.ops} ops on {len(r.devices)} devices)"),
        ("system", r.system),
        ("step time", seconds(r.step_time_s)),
        ("compute", f"{seconds(r.compute_s)} per device (mean)"),
        ("communication", f"{seconds(r.comm_s)}: {seconds(r.exposed_comm_s)} exposed, "
                          f"{seconds(r.overlapped_comm_s)} overlapped"),
        ("idle", seconds(r.idle_s)),
        *_energy_rows(r),
        ("collectives", f"{r.comm_instances} played" + (
            f", {r.comm_groups_folded} groups folded into them" if r.comm_groups_folded else "")),
    ]
    for link in r.links[:TOP_LINKS]:
        rows.append(("busiest links" if link is r.links[0] else "",
                     f"{link.link}  {link.utilization:.0%}  ({format_quantity(link.bytes, 'bytes')})"))
    rows.append(("simulated in", f"{r.sim_wall_s * 1e3:.1f} ms, {r.events} events, "
                                 f"{r.replayed_classes} replayed device classes"))
    print(table(("", ""), rows).split("\n", 2)[2])


def _energy_rows(r: StepResult) -> list[tuple[str, str]]:
    """The step's energy over every device and link, and the system's average power."""
    if r.energy_j is None:
        return []
    return [("energy", f"{r.energy_j:.4g} J ({format_quantity(r.average_power_w, 'watts')} average over "
                       f"{len(r.devices)} devices; {r.link_energy_j:.3g} J on links)")]


def print_xla_estimate(xla: EstimateComparison, kinds: int = 6) -> None:
    """accelsim's times beside XLA's cost model (docs/import-hlo.md, "XLA's estimates")."""
    seconds = lambda value: format_quantity(value, "seconds")  # noqa: E731
    ratio = lambda ours, theirs: f"{ours / theirs:.2f}x" if theirs else "-"  # noqa: E731
    rows = [("XLA's estimate", f"{seconds(xla.xla_s)} over {len(xla.ops)} ops (estimated_cycles at "
                               f"{format_quantity(xla.clock_hz, 'hz')}); accelsim {seconds(xla.accelsim_s)} for "
                               f"them alone ({ratio(xla.accelsim_s, xla.xla_s)} XLA's)")]
    for t in xla.by_kind()[:kinds]:
        window = (f"; XLA's least per window {t.fewest_xla_cycles_per_window:.0f} cycles"
                  if t.fewest_xla_cycles_per_window is not None else "")
        rows.append(("", f"{t.kind}: {t.ops} ops, XLA {seconds(t.xla_s)}, accelsim {seconds(t.accelsim_s)} "
                         f"({ratio(t.accelsim_s, t.xla_s)}){window}"))
    if xla.unestimated_ops:
        rows.append(("", f"{xla.unestimated_ops} compute ops without an XLA estimate: accelsim "
                         f"{seconds(xla.unestimated_s)}"))
    print(table(("", ""), rows).split("\n", 2)[2])
