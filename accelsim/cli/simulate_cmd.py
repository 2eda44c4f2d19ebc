"""``accelsim simulate``: one kernel on one chip (collectives on a system: :mod:`collective_cmd`)."""

from __future__ import annotations

import argparse
import sys
import time

from accelsim.arch.model import Chip, config_files, load_arch
from accelsim.cli import collective_cmd
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.output import print_json, table
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.timeline import chrome_trace
from accelsim.errors import InputError
from accelsim.families import FAMILIES, get_family
from accelsim.families.base import parse_assignments
from accelsim.families.search import best_config, run_config, split_params
from accelsim.files import check_output_file, write_json
from accelsim.report.peaks import roofline_figures
from accelsim.trace.kernel import load_trace
from accelsim.units import format_quantity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="predict the latency of a kernel on a chip, or of a collective on a system")
    p.add_argument("trace", nargs="?", metavar="TRACE.json", help="a kernel trace file (instead of --kernel)")
    p.add_argument("--arch", help="chip name or config path (see 'accelsim arch list'); not with --system")
    p.add_argument("--kernel", metavar="FAMILY", help="built-in kernel family: gemm, attention, softmax, ...")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="family parameter or config value (repeatable); config=auto searches the config space")
    add_set_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timeline", metavar="FILE", help="write a Chrome trace-event JSON timeline (Perfetto)")
    collective_cmd.add_options(p)
    p.set_defaults(run=run_simulate)


def load_chip(name: str, overrides: list[str]) -> Chip:
    arch = load_arch(name, overrides)
    if not isinstance(arch, Chip):
        raise InputError(f"{name!r} is a {type(arch).__name__.lower()}; kernels run on a chip", source="--arch")
    return arch


def run_simulate(args: argparse.Namespace) -> int:
    if args.system is not None:
        return collective_cmd.run_collective(args)
    if args.arch is None:
        raise InputError("give --arch CHIP for a kernel, or --system SYSTEM for a collective", source="simulate")
    collective = [flag for flag, value in (("--collective", args.collective), ("--bytes", args.bytes),
                                           ("--sweep-bytes", args.sweep_bytes), ("--group", args.group),
                                           ("--ranks", args.ranks), ("--algorithm", args.algorithm))
                  if value is not None and value != "auto"]
    if collective:
        raise InputError(f"{', '.join(collective)} apply to a collective on --system, not to a kernel",
                         source="simulate")
    if args.timeline is not None:
        inputs = ([args.trace] if args.trace else []) + (config_files(args.arch) if args.arch else [])
        check_output_file(args.timeline, "--timeline", inputs=inputs)
    started = time.perf_counter()
    chip = load_chip(args.arch, args.overrides)
    searched = None
    if args.trace and args.kernel:
        raise InputError("give a trace file or --kernel, not both", source="simulate")
    if args.trace:
        if args.param:
            raise InputError("--param applies to --kernel, not to a trace file", source="--param")
        trace = load_trace(args.trace)
        family_name = trace.metadata.get("family")
        try:
            sim = simulate_kernel(trace, chip, timeline=bool(args.timeline))
        except InputError as exc:
            exc.source = exc.source or args.trace  # the engine names fields of the trace
            raise
    elif args.kernel:
        family = get_family(args.kernel)
        family_name = family.name
        params, config_given, auto = split_params(family, parse_assignments(args.param, "--param"))
        if auto:
            search = best_config(family, params, chip)
            searched = search.searched
            best = search.best
            trace = best.trace
            # the search ran without a timeline: replay the winner only if one is asked for
            sim = run_config(family, params, best.config, chip, timeline=True).sim if args.timeline else best.sim
        else:
            config = family.resolve_config(params, config_given, chip)
            run = run_config(family, params, config, chip, timeline=bool(args.timeline))
            trace, sim = run.trace, run.sim
    else:
        raise InputError("give a kernel trace file or --kernel FAMILY", source="simulate")
    if args.timeline:
        write_json(args.timeline, chrome_trace(sim), "--timeline")
    summary = sim.summary()
    summary |= roofline_figures(summary, trace, chip)
    if family_name in FAMILIES:
        summary["config"] = FAMILIES[family_name].shown_config(summary["config"], chip)
    if not [o for o in args.overrides if not o.strip().startswith("uncertainty.")]:
        add_interval(summary, chip, family_name)  # a what-if chip was never measured: no interval
    summary["sim_wall_s"] = time.perf_counter() - started if searched else summary["sim_wall_s"]
    if searched:
        summary["configs_searched"] = searched
    if args.json:
        print_json(summary)
    else:
        print_summary(summary)
        scoped = chip.local.max_per_program_bytes
        if chip.family == "tpu" and sim.local_memory_bytes > scoped:
            print(f"note: a grid step holds {format_quantity(sim.local_memory_bytes, 'bytes')} of VMEM, over the "
                  f"{format_quantity(scoped, 'bytes')} a pallas_call gets by default (local_memory.max_per_program): "
                  f"the kernel needs vmem_limit_bytes of at least that", file=sys.stderr)
    return 0


def add_interval(summary: dict, chip: Chip, family: str | None) -> None:
    """``latency_s_p05`` / ``latency_s_p95`` from the chip's calibrated held-out residuals
    for this kernel family, when it has them. Residuals are ``predicted / measured - 1``,
    so the measured latency lies in ``predicted / (1 + residual)``. Not for a chip changed
    by ``--set``: the residuals were measured on the chip as fitted."""
    if family in chip.uncertainty:
        p05, p95 = chip.uncertainty[family]
        summary["latency_s_p05"] = summary["latency_s"] / (1 + p95)
        summary["latency_s_p95"] = summary["latency_s"] / (1 + p05)


def print_summary(s: dict) -> None:
    rows = [
        ("kernel", s["kernel"]),
        ("arch", s["arch"]),
        ("latency", format_quantity(s["latency_s"], "seconds") + (
            f" (90% interval {format_quantity(s['latency_s_p05'], 'seconds')} .. "
            f"{format_quantity(s['latency_s_p95'], 'seconds')})" if "latency_s_p05" in s else "")),
        ("bound", s["bound"]),
        ("achieved compute", f"{format_quantity(s['achieved_flops_per_s'], 'flops_per_s')} "
                             f"({s['flops_fraction_of_peak']:.1%} of the {format_quantity(s['peak_flops_per_s'], 'flops_per_s')} "
                             f"{s['peak_flops_of']} peak)"),
        ("achieved HBM bandwidth", f"{format_quantity(s['achieved_hbm_bytes_per_s'], 'bytes_per_s')} "
                                   f"({s['hbm_fraction_of_peak']:.1%} of {format_quantity(s['peak_hbm_bytes_per_s'], 'bytes_per_s')})"),
        ("arithmetic intensity", _intensity(s["arithmetic_intensity_flops_per_byte"])
         + f" (the chip's ridge point: {_intensity(s['ridge_point_flops_per_byte'])})"),
        ("flops", f"{s['flops']:.4g}"),
        ("HBM bytes", format_quantity(s["hbm_bytes"], "bytes")),
        ("programs", f"{s['programs']} ({s['programs_per_core']} per core, limited by {s['occupancy_limit']})"),
    ]
    if s.get("kernels", 1) > 1:
        rows.append(("kernels", f"{s['kernels']}, one after another ({format_quantity(s['launch_overhead_s'], 'seconds')} "
                                "of launches in the latency)"))
    if s.get("shared_cache_hit_rate") is not None:
        rows.append(("L2/CMEM hit rate", f"{s['shared_cache_hit_rate']:.1%}"))
    if s.get("hbm_queueing_s") is not None:
        rows.append(("HBM queueing", format_quantity(s["hbm_queueing_s"], "seconds") + " per load"))
    rows.append(("utilization", ", ".join(f"{k} {v:.0%}" for k, v in s["utilization"].items())))
    if s["config"]:
        rows.append(("config", " ".join(f"{k}={v}" for k, v in s["config"].items())))
    if "configs_searched" in s:
        rows.append(("configs searched", str(s["configs_searched"])))
    rows.append(("simulated in", f"{s['sim_wall_s'] * 1e3:.1f} ms, {s['events']} events"))
    print(table(("", ""), rows).split("\n", 2)[2])


def _intensity(flops_per_byte: float | None) -> str:
    return "no HBM traffic" if flops_per_byte is None else f"{flops_per_byte:.4g} flop/byte"
