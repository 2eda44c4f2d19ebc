"""``accelsim demo``: a representative set of kernels on an H100 and a TPU v5e, with a
table, Perfetto timelines and a roofline plot written to a folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.cli.output import table
from accelsim.cli.simulate_cmd import load_chip
from accelsim.errors import InputError, shown
from accelsim.engine.timeline import chrome_trace
from accelsim.families import FAMILIES, get_family
from accelsim.families.search import run_config, split_params
from accelsim.files import check_output_dir, write_json
from accelsim.system.replay import ReplayOptions, replay
from accelsim.system.timeline import chrome_trace as system_chrome_trace
from accelsim.system.trace import load_system_trace
from accelsim.units import format_quantity

CHIPS = ("h100-sxm", "tpu-v5e")
CASES = (
    ("gemm 4096^3 bf16", "gemm", {"M": "4096", "N": "4096", "K": "4096", "dtype": "bf16"}),
    ("gemm 8192x1024x8192", "gemm", {"M": "8192", "N": "1024", "K": "8192", "dtype": "bf16"}),
    ("attention fwd 8k d128 causal", "attention",
     {"batch": "1", "heads": "16", "seq_q": "8192", "head_dim": "128", "causal": "true"}),
    ("attention decode 8k GQA", "attention",
     {"batch": "8", "heads": "32", "kv_heads": "8", "seq_q": "1", "seq_kv": "8192", "head_dim": "128"}),
    ("rmsnorm 16384x8192", "rmsnorm", {"rows": "16384", "cols": "8192", "dtype": "bf16"}),
)
SYSTEM_TRACE = Path(__file__).resolve().parents[2] / "traces" / "system" / "transformer_step_dp2_tp4.json"
"""Imported from XLA HLO by ``traces/system/make_transformer_step.py`` (a source checkout has it)."""
SYSTEM = "dgx-h100"
ROOFLINE = "roofline.png"
SYSTEM_TIMELINE = "system-transformer-step.timeline.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="simulate a representative kernel set on an H100 and a TPU v5e")
    p.add_argument("--out", default="accelsim-demo", metavar="DIR", help="folder for timelines and plots")
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from accelsim.report.roofline import (  # matplotlib loads only when used
        RooflinePoint,
        plot_roofline,
    )
    out = check_output_dir(args.out, "--out")
    chips = [load_chip(name, []) for name in CHIPS]
    cases = [(chip, case) for chip in chips for case in CASES if case[1] in FAMILIES]
    timelines = [f"{chip.name}-{case[1]}-{i}.timeline.json" for i, (chip, case) in enumerate(cases)]
    for name in (*timelines, ROOFLINE, SYSTEM_TIMELINE):  # before the work: no half-written demo
        if (out / name).is_dir():
            raise InputError(f"{shown(str(out / name))} is a folder; the demo writes a file there", source="--out")
    rows, points = [], []
    for (chip, (label, family_name, given)), timeline in zip(cases, timelines):
        family = get_family(family_name)
        params, config_given, _ = split_params(family, given)
        config = family.resolve_config(params, config_given, chip)
        sim = run_config(family, params, config, chip, timeline=True).sim
        write_json(out / timeline, chrome_trace(sim))
        r = sim.result()
        points.append(RooflinePoint(label, chip.name, r.flops, r.hbm_bytes, r.latency_s))
        rows.append((
            chip.name, label, format_quantity(r.latency_s, "seconds"), r.bound,
            format_quantity(r.achieved_flops_per_s, "flops_per_s"),
            format_quantity(r.achieved_hbm_bytes_per_s, "bytes_per_s"),
            f"{r.sim_wall_s * 1e3:.0f} ms",
        ))
    print(table(("CHIP", "KERNEL", "LATENCY", "BOUND", "COMPUTE", "HBM BW", "SIMULATED IN"), rows))
    plot = plot_roofline(chips, points, out / ROOFLINE)
    written = len(rows) + replay_example(out)
    print(f"\nwrote {written} Perfetto timelines (*.timeline.json) and {plot.name} to {out}/")
    print("open a timeline at https://ui.perfetto.dev ; compare chips with 'accelsim arch diff h100-sxm tpu-v5e'")
    return 0


def replay_example(out: Path) -> int:
    """Replay the shipped training-step trace on a DGX H100; returns timelines written."""
    if not SYSTEM_TRACE.exists():
        print(f"\n(system trace example not found at {SYSTEM_TRACE}: run from a source checkout)")
        return 0
    trace = load_system_trace(SYSTEM_TRACE)
    result = replay(trace, load_arch(SYSTEM), base_dir=SYSTEM_TRACE.parent, options=ReplayOptions(timeline=True))
    write_json(out / SYSTEM_TIMELINE, system_chrome_trace(result))
    step = result.result()
    row = (SYSTEM, "transformer step dp2 x tp4 (from XLA HLO)", format_quantity(step.step_time_s, "seconds"),
           format_quantity(step.compute_s, "seconds"), format_quantity(step.exposed_comm_s, "seconds"),
           f"{step.sim_wall_s * 1e3:.0f} ms")
    print()
    print(table(("SYSTEM", "TRACE", "STEP TIME", "COMPUTE", "EXPOSED COMM", "SIMULATED IN"), [row]))
    return 1
