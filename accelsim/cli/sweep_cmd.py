"""``accelsim sweep SPEC.yaml``: what-if sweeps over config fields and workloads."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from accelsim.cli.calibrate_cmd import check_jobs
from accelsim.errors import InputError
from accelsim.files import check_output_dir
from accelsim.study.plan import plan_sweep
from accelsim.study.journal import JOURNAL_NAME
from accelsim.study.runner import require_ray
from accelsim.workers import default_workers
from accelsim.study.sweep import OUTPUT_FILES, input_files, run_sweep


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a what-if sweep: vary config fields, run workloads, tabulate and plot")
    p.add_argument("spec", metavar="SPEC.yaml", help="the sweep spec (see docs/sweeps.md)")
    p.add_argument("-o", "--output", metavar="DIR", help="output folder (default: sweep-<spec name>)")
    p.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: one per CPU core)")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run on Ray: 'auto' (a running cluster), 'local' (start one here) or a cluster address")
    p.add_argument("--fresh", action="store_true", help="discard the folder's journal instead of resuming from it")
    p.add_argument("--dry-run", action="store_true", help="check the spec and list the points; run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run_sweep_cmd, options_of_fields={"output": "-o", "ray": "--ray"})


def run_sweep_cmd(args: argparse.Namespace) -> int:
    if args.workers is not None:
        check_jobs(args.workers, "--workers")
    if args.workers is not None and args.ray:
        raise InputError("--workers is for local processes; Ray decides its own", source="--ray")
    plan = plan_sweep(args.spec)
    runs = len(plan.points) * len(plan.jobs)
    if args.dry_run:
        print(f"{len(plan.points)} points x {len(plan.jobs)} workloads = {runs} runs; spec is valid")
        for point in plan.points[:10]:
            print(f"  point {point.index}: {point.base} {' '.join(point.overrides)}".rstrip())
        if len(plan.points) > 10:
            print(f"  ... and {len(plan.points) - 10} more")
        return 0
    if args.ray:  # before the folder is made: a missing Ray leaves nothing behind
        require_ray()
    out = check_output_dir(f"sweep-{Path(args.spec).stem}" if args.output is None else args.output, "-o",
                           inputs=[args.spec, *input_files(plan)], writes=[*OUTPUT_FILES, JOURNAL_NAME])
    started = time.perf_counter()
    outcome = run_sweep(plan, out, workers=args.workers or default_workers(), ray=args.ray, fresh=args.fresh,
                        progress=not args.quiet)
    wall = time.perf_counter() - started
    failed = sum(r.status != "ok" for r in outcome.records)
    resumed = f", {outcome.resumed} from the journal" if outcome.resumed else ""
    print(f"{runs} runs ({outcome.ran} run now{resumed}; {failed} failed) in {wall:.1f} s")
    print(f"wrote {out}/: " + ", ".join(outcome.files))
    return 0
