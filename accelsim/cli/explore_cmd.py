"""``accelsim explore``: rank kernel configs on a chip by predicted latency."""

from __future__ import annotations

import argparse
import csv
import io
import time
from dataclasses import replace
from pathlib import Path

from accelsim.capture.triton_compile import check_compile_target
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.calibrate_cmd import check_jobs
from accelsim.cli.output import print_json, table
from accelsim.cli.simulate_cmd import FAMILY_OPTIONS, load_chip
from accelsim.errors import InputError, read_text_file, shown
from accelsim.families import FAMILIES, get_family
from accelsim.families.base import parse_assignments
from accelsim.families.search import split_params
from accelsim.files import check_output_dir
from accelsim.study.explore import (
    Candidate,
    CaptureSpec,
    autotune_configs,
    config_text,
    explore_captured,
    explore_family,
    load_space,
    why,
)
from accelsim.units import format_quantity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explore", help="rank kernel configs (tiles, stages, warps, block shapes) on a chip")
    p.add_argument("--arch", required=True, help="chip name or config path")
    p.add_argument("--kernel", required=True, metavar="FAMILY|FILE.py:FUNCTION",
                   help="a built-in family (gemm, attention, ...) or a Triton/Pallas kernel's entry function")
    p.add_argument("--capture", choices=("triton", "pallas"),
                   help="what FILE.py is written in (default: read from its imports)")
    p.add_argument("--param", action="append", default=[], metavar="K=V", help="problem parameter (repeatable)")
    add_set_option(p)
    p.add_argument("--space", metavar="SPACE.yaml",
                   help="candidate configs ('configs:' list or 'grid:'); default: the family's search space, "
                        "or a Triton kernel's @triton.autotune configs")
    p.add_argument("--compile-for", metavar="sm_NN",
                   help="Triton: compile each config for this NVIDIA target (no GPU needed) and use the compiler's "
                        "shared memory and registers; a config the compiler rejects is listed as not fitting")
    p.add_argument("--family", metavar="NAME",
                   help="a captured kernel: the built-in family it implements, so a calibrated chip's family_values "
                        "for it apply (as capture --family marks a trace)")
    p.add_argument("--top", type=int, default=10, metavar="K", help="rows to show (default 10)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes capturing and simulating the candidates (default 1; the ranking is the "
                        "same)")
    p.add_argument("-o", "--output", metavar="DIR", help="write ranking.csv, ranking.md and ranking.png here")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=run_explore, options_of_fields={**FAMILY_OPTIONS, "space": "--space",
                                                            "compile_for": "--compile-for"})


def run_explore(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise InputError(f"expected --top >= 1, got {args.top}", source="--top")
    check_jobs(args.jobs)
    if args.output is not None:
        inputs = [args.space] if args.space else []
        if ":" in args.kernel:
            inputs.append(args.kernel.rpartition(":")[0])
        check_output_dir(args.output, "-o", create=False, inputs=inputs, writes=RANKING_FILES)
    chip = load_chip(args.arch, args.overrides)
    space = load_space(args.space) if args.space else None
    started = time.perf_counter()
    if ":" in args.kernel:
        title, ranked = _explore_captured(args, chip, space)
    else:
        if args.capture:
            raise InputError("--capture applies to FILE.py:FUNCTION kernels", source="--capture")
        if args.compile_for:
            raise InputError("--compile-for applies to FILE.py:FUNCTION Triton kernels", source="--compile-for")
        if args.family:
            raise InputError("--family marks a FILE.py:FUNCTION kernel; a built-in family is its own", source="--family")
        family = get_family(args.kernel)
        params, config, auto = split_params(family, parse_assignments(args.param, "--param"))
        if config or auto:
            raise InputError("explore searches the config; give problem parameters only", source="--param",
                             field=next(iter(config), "config"))
        ranked = [replace(c, config=family.shown_config(c.config, chip))
                  for c in explore_family(family, params, chip, space, jobs=args.jobs,
                                          chip_source=(args.arch, tuple(args.overrides)))]
        title = f"{family.name} " + " ".join(f"{k}={v}" for k, v in params.items())
    wall = time.perf_counter() - started
    ran = [c for c in ranked if c.sim is not None]
    if not ran:
        raise InputError(f"no candidate config runs on {chip.name}; first reason: {ranked[0].error}",
                         source="--space" if space else "--kernel")
    if args.json:
        print_json(_json(title, chip.name, ranked, wall))
    else:
        what_if = f" (--set {', '.join(o.strip() for o in args.overrides)})" if args.overrides else ""
        print(f"{title} on {chip.name}{what_if}: {len(ranked)} configs, {len(ran)} ran, "
              f"{len(ranked) - len(ran)} did not fit ({wall:.1f} s)")
        print(_table(ranked[: args.top], ran[0].latency_s))
    if args.output is not None:
        _write(Path(args.output), title, chip.name, ranked)
        print(f"wrote {args.output}/: ranking.csv, ranking.md, ranking.png")
    return 0


def _explore_captured(args, chip, space):
    path, _, function = args.kernel.rpartition(":")
    if not Path(path).is_file():
        raise InputError("no such file", source=path)
    tool = args.capture or _tool_of(Path(path))
    params = parse_assignments(args.param, "--param")
    check_compile_target(tool, args.compile_for)
    if args.family is not None and args.family not in FAMILIES:
        raise InputError(f"unknown kernel family {shown(args.family)}; expected one of: {', '.join(FAMILIES)}",
                         source="--family")
    if space is None:
        if tool != "triton":
            raise InputError("a Pallas kernel needs --space with its candidate block shapes", source="--space")
        space = autotune_configs(path, function)
        if not space:
            raise InputError("no @triton.autotune configs in this file; give --space", source=path)
    try:
        if tool == "triton":
            import accelsim.capture.triton
        else:
            import accelsim.capture.pallas  # noqa: F401
    except ModuleNotFoundError as exc:
        extra = "jax" if tool == "pallas" else "triton"
        raise InputError(f"{tool} capture needs {exc.name}: pip install -e '.[{extra}]'", source="--kernel") from None
    capture = CaptureSpec(tool, path, function, args.compile_for if tool == "triton" else None,  # Pallas: no compiler
                          family=args.family)
    ranked = explore_captured(capture, params, chip, space, jobs=args.jobs, chip_source=(args.arch, tuple(args.overrides)))
    return f"{args.kernel} " + " ".join(args.param), ranked


def _tool_of(path: Path) -> str:
    text = read_text_file(path, "kernel source")
    if "pallas" in text:
        return "pallas"
    if "triton" in text:
        return "triton"
    raise InputError("cannot tell whether this is a Triton or a Pallas kernel; give --capture", source=str(path))


def _seconds(value: float) -> str:
    return format_quantity(value, "seconds")


def _table(rows: list[Candidate], best: float) -> str:
    body = []
    for i, c in enumerate(rows, 1):
        if c.sim is None:
            body.append((str(i), "-", "-", "does not fit", config_text(c.config), c.error or ""))
        else:
            body.append((str(i), _seconds(c.latency_s), f"{c.latency_s / best:.2f}x", c.sim.bound,
                         config_text(c.config), why(c.sim)))
    return table(("RANK", "LATENCY", "VS BEST", "BOUND", "CONFIG", "WHY (busiest resources; occupancy)"), body)


def _json(title: str, arch: str, ranked: list[Candidate], wall: float) -> dict:
    return {
        "kernel": title, "arch": arch, "configs": len(ranked), "sim_wall_s": wall,
        "ranking": [
            {"config": c.config, "error": c.error} if c.sim is None else
            {"config": c.config, "latency_s": c.latency_s, "bound": c.sim.bound, "utilization": c.sim.utilization,
             "programs": c.sim.programs, "programs_per_core": c.sim.programs_per_core,
             "occupancy_limit": c.sim.occupancy_limit, "shared_cache_hit_rate": c.sim.shared_cache_hit_rate}
            for c in ranked
        ],
    }


RANKING_FILES = ("ranking.csv", "ranking.md", "ranking.png")
"""What :func:`_write` writes into the ``-o`` folder."""


def _write(folder: Path, title: str, arch: str, ranked: list[Candidate]) -> None:
    from accelsim.study.plots import plot_ranking  # matplotlib loads only when used
    check_output_dir(folder, "-o")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["rank", "config", "latency_s", "bound", "why", "error"])
    for i, c in enumerate(ranked, 1):
        writer.writerow([i, config_text(c.config), f"{c.latency_s:.9g}" if c.sim else "", c.sim.bound if c.sim else "",
                         why(c.sim) if c.sim else "", c.error or ""])
    table, markdown, image = (folder / name for name in RANKING_FILES)
    table.write_text(buffer.getvalue(), encoding="utf-8")
    ran = [c for c in ranked if c.sim is not None]
    markdown.write_text(
        f"# {title} on {arch}\n\n{len(ranked)} configs, {len(ran)} ran\n\n```\n{_table(ranked, ran[0].latency_s)}\n```\n",
        encoding="utf-8")
    plot_ranking(f"{title} on {arch}", [config_text(c.config) for c in ran], [c.latency_s for c in ran],
                 [c.sim.bound for c in ran], image)
