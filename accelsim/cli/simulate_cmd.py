"""``accelsim simulate``: one kernel on one chip (collectives on a system: :mod:`collective_cmd`)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from accelsim.arch.model import Chip, TpuChip, config_files, kind_name, load_arch
from accelsim.cli import collective_cmd, moe_cmd
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.output import print_json, table
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.timeline import chrome_trace
from accelsim.errors import InputError, shown
from accelsim.families import FAMILIES, get_family
from accelsim.families.base import parse_assignments
from accelsim.families.search import best_config, run_config, split_params
from accelsim.files import check_output_file, write_json
from accelsim.report.peaks import roofline_figures
from accelsim.results import KernelResult
from accelsim.trace.kernel import load_trace
from accelsim.units import format_quantity

FAMILY_OPTIONS = {"family": "--kernel", "params": "--param"}
"""The options that give a kernel family and its parameters: the families' errors name
``family`` and ``params.NAME`` (as a system trace's family op has them), the command line
``--kernel`` and ``--param: NAME``."""


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
    moe_cmd.add_options(p)
    p.set_defaults(run=run_simulate, options_of_fields={**collective_cmd.OPTIONS_OF_FIELDS, **FAMILY_OPTIONS,
                                                        **moe_cmd.OPTIONS_OF_FIELDS})


def load_chip(name: str, overrides: list[str]) -> Chip:
    arch = load_arch(name, overrides)
    if not isinstance(arch, Chip):
        raise InputError(f"{shown(name)} is a {kind_name(arch)}; kernels run on a chip", source="--arch")
    return arch


def run_simulate(args: argparse.Namespace) -> int:
    if args.moe is not None:
        if args.system is None:
            raise InputError("--moe runs on a --system SYSTEM", source="simulate")
        return moe_cmd.run_moe(args)
    moe_cmd.check_not_moe(args)
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
    result = sim.result()
    result = replace(result, roofline=roofline_figures(result, trace, chip))
    if family_name in FAMILIES:
        result = replace(result, config=FAMILIES[family_name].shown_config(result.config, chip))
    interval = latency_interval(result.latency_s, chip, family_name)
    what_if = [o for o in args.overrides if not o.strip().startswith("uncertainty.")]
    if interval and not what_if:  # a what-if chip was never measured: no interval
        result = replace(result, latency_s_p05=interval[0], latency_s_p95=interval[1])
    if searched:  # the whole search, not only the winner's replay
        result = replace(result, sim_wall_s=time.perf_counter() - started, configs_searched=searched)
    if args.json:
        print_json(result.to_json())
    else:
        print_summary(result)
        scoped = chip.local.max_per_program_bytes
        if isinstance(chip, TpuChip) and sim.local_memory_bytes > scoped:
            print(f"note: a grid step holds {format_quantity(sim.local_memory_bytes, 'bytes')} of VMEM, over the "
                  f"{format_quantity(scoped, 'bytes')} a pallas_call gets by default (local_memory.max_per_program): "
                  f"the kernel needs vmem_limit_bytes of at least that", file=sys.stderr)
    return 0


def latency_interval(latency_s: float, chip: Chip, family: str | None) -> tuple[float, float] | None:
    """``(latency_s_p05, latency_s_p95)`` from the chip's calibrated held-out residuals for
    this kernel family, when it has them. Residuals are ``predicted / measured - 1``, so
    the measured latency lies in ``predicted / (1 + residual)``. Not for a chip changed by
    ``--set``: the residuals were measured on the chip as fitted."""
    if family not in chip.uncertainty:
        return None
    p05, p95 = chip.uncertainty[family]
    return latency_s / (1 + p95), latency_s / (1 + p05)


def print_summary(r: KernelResult) -> None:
    interval = "" if r.latency_s_p05 is None else (
        f" (90% interval {format_quantity(r.latency_s_p05, 'seconds')} .. {format_quantity(r.latency_s_p95, 'seconds')})")
    rows = [
        ("kernel", r.kernel),
        ("arch", r.arch),
        ("latency", format_quantity(r.latency_s, "seconds") + interval),
        ("bound", r.bound),
        *_roofline_rows(r),
        ("flops", f"{r.flops:.4g}"),
        ("HBM bytes", format_quantity(r.hbm_bytes, "bytes")),
        ("programs", f"{r.programs} ({r.programs_per_core} per core, limited by {r.occupancy_limit})"),
    ]
    if r.kernels > 1:
        rows.append(("kernels", f"{r.kernels}, one after another ({format_quantity(r.launch_overhead_s, 'seconds')} "
                                "of launches in the latency)"))
    if r.shared_cache_hit_rate is not None:
        rows.append(("L2/CMEM hit rate", f"{r.shared_cache_hit_rate:.1%}"))
    if r.hbm_queueing_s is not None:
        rows.append(("HBM queueing", format_quantity(r.hbm_queueing_s, "seconds") + " per load"))
    rows.append(("utilization", ", ".join(f"{k} {v:.0%}" for k, v in r.utilization.items())))
    rows.extend(energy_rows(r))
    if r.config:
        rows.append(("config", " ".join(f"{k}={v}" for k, v in r.config.items())))
    if r.configs_searched is not None:
        rows.append(("configs searched", str(r.configs_searched)))
    rows.append(("simulated in", f"{r.sim_wall_s * 1e3:.1f} ms, {r.events} events"))
    print(table(("", ""), rows).split("\n", 2)[2])


def energy_rows(r: KernelResult) -> list[tuple[str, str]]:
    """The kernel's energy and average power, and what a power cap did to its clock."""
    if r.energy_j is None:
        return []
    rows = [("energy", f"{r.energy_j:.4g} J ({format_quantity(r.average_power_w, 'watts')} average)")]
    if r.power_cap_w is not None:
        cap = format_quantity(r.power_cap_w, "watts")
        rows.append(("power cap", f"{cap}: clock lowered to {format_quantity(r.throttled_clock_hz, 'hz')} (at full "
                                  f"clock {format_quantity(r.full_clock_latency_s, 'seconds')})"
                     if r.throttled_clock_hz is not None else _cap_not_applied(r, cap)))
    return rows


def _cap_not_applied(r: KernelResult, cap: str) -> str:
    """Why a kernel under a cap kept its full clock: it stayed below the cap, (launched from idle:
    ``power.dvfs.boost.from_idle``) it ended before the power limiter acted, or the chip has no
    lower clock step (``power.dvfs.min_clock`` at its clock)."""
    if r.limiter_late:
        return f"{cap}: passed, but the kernel ends before the power limiter acts (launched from idle)"
    if r.average_power_w is not None and r.average_power_w > r.power_cap_w:
        return f"{cap}: passed, but no lower clock step to run at (power.dvfs.min_clock)"
    return f"{cap}: not reached at full clock"


def _roofline_rows(r: KernelResult) -> list[tuple[str, str]]:
    """Achieved compute and HBM bandwidth as shares of the chip's peaks, and the kernel's
    arithmetic intensity beside the chip's ridge point."""
    compute = format_quantity(r.achieved_flops_per_s, "flops_per_s")
    bandwidth = format_quantity(r.achieved_hbm_bytes_per_s, "bytes_per_s")
    if r.roofline is None:
        return [("achieved compute", compute), ("achieved HBM bandwidth", bandwidth)]
    roof = r.roofline
    return [
        ("achieved compute", f"{compute} ({roof['flops_fraction_of_peak']:.1%} of the "
                             f"{format_quantity(roof['peak_flops_per_s'], 'flops_per_s')} {roof['peak_flops_of']} peak)"),
        ("achieved HBM bandwidth", f"{bandwidth} ({roof['hbm_fraction_of_peak']:.1%} of "
                                   f"{format_quantity(roof['peak_hbm_bytes_per_s'], 'bytes_per_s')})"),
        ("arithmetic intensity", _intensity(roof["arithmetic_intensity_flops_per_byte"])
         + f" (the chip's ridge point: {_intensity(roof['ridge_point_flops_per_byte'])})"),
    ]


def _intensity(flops_per_byte: float | None) -> str:
    return "no HBM traffic" if flops_per_byte is None else f"{flops_per_byte:.4g} flop/byte"
