"""``accelsim model MODEL --system SYSTEM``: a model's training, prefill or decode step,
built as a system trace from the model, the mode and a parallel layout, and replayed."""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

from accelsim.arch.model import config_files, load_arch
from accelsim.arch.model import Chip, TpuChip
from accelsim.cli.arch_cmd import add_set_option
from accelsim.cli.output import print_json, table
from accelsim.errors import InputError
from accelsim.files import check_output_dir, check_output_file, write_json, write_text_atomic
from accelsim.model.hf_config import load_model
from accelsim.model.layout import (FRAMEWORKS, INFERENCE_DEFAULT, Framework, Layout, Workload,
                                   framework_named, validated)
from accelsim.model.presets import PRESETS
from accelsim.model.search import MAX_REPLAYS, Candidate, search_layouts
from accelsim.model.step import plan_step, run_step, step_trace
from accelsim.results import ModelStepResult
from accelsim.system.replay import ReplayOptions, chip_of
from accelsim.system.timeline import chrome_trace
from accelsim.system.trace import save_system_trace
from accelsim.units import format_quantity

LAYOUT_OPTIONS = ("tp", "pp", "cp", "dp", "fsdp", "ep", "virtual_stages", "micro_batch")
OPTIONS_OF_FIELDS = {
    "system": "--system", "framework": "--framework", "seq-len": "--seq", "batch": "--batch", "limit": "--limit",
    **{spelled: f"--{name.replace('_', '-')}" for name in LAYOUT_OPTIONS for spelled in (name, name.replace("_", "-"))},
}
"""The options that give the fields the model's and layout's checks name (``micro_batch``,
or ``micro-batch`` as :func:`~accelsim.model.layout.validated` spells it)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="a model's training, prefill or decode step on a system (docs/model.md)")
    p.add_argument("model", metavar="MODEL", help=f"a built-in model ({', '.join(PRESETS)}) or a Hugging Face "
                                                  "config.json (or its folder)")
    p.add_argument("--system", required=True, help="system name or config path (a node, cluster, torus, multislice)")
    add_set_option(p)
    p.add_argument("--mode", choices=("train", "prefill", "decode"), default="train")
    p.add_argument("--seq", type=int, default=4096, metavar="N",
                   help="tokens per sequence (decode: the KV cache length); default 4096")
    p.add_argument("--batch", type=int, metavar="N",
                   help="global batch in sequences (default: one microbatch per data-parallel replica, PP of them "
                        "when pipelined)")
    p.add_argument("--dtype", choices=("bf16", "fp8"), default="bf16", help="GEMM input type (default bf16)")
    for name in LAYOUT_OPTIONS:
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, metavar="N",
                       help="data-parallel replicas (default: the system's remaining devices)" if name == "dp"
                       else None)
    p.add_argument("--zero", type=int, choices=(0, 1, 2), default=1, help="ZeRO stage over DP (default 1)")
    p.add_argument("--no-sequence-parallel", dest="sequence_parallel", action="store_false")
    p.add_argument("--recompute", choices=("none", "selective", "full"), default="none")
    p.add_argument("--framework", choices=tuple(FRAMEWORKS),
                   help="whose overlap and kernel choice to model (default: megatron for GPU training, "
                        f"{INFERENCE_DEFAULT} for GPU inference, maxtext on TPUs)")
    p.add_argument("--tp-overlap", action="store_true", help="TP collectives beside their GEMMs (collective matmul)")
    p.add_argument("--no-overlap-grad-reduce", dest="overlap_grad_reduce", action="store_false")
    p.add_argument("--cross-entropy-loss-fusion", dest="fused_cross_entropy", action="store_true",
                   help="Megatron-LM's fused vocabulary-parallel cross-entropy")
    p.add_argument("--no-dropout", dest="dropout", action="store_false",
                   help="train without dropout (Megatron-LM's --hidden-dropout 0 --attention-dropout 0)")
    p.add_argument("--gemm-impl", help="gemm family implementation (default: the framework's)")
    p.add_argument("--attention-impl", help="attention family implementation (default: the chip's)")
    p.add_argument("-o", "--output", metavar="TRACE.json", help="write the step's system trace (replay it with "
                                                                "accelsim replay)")
    p.add_argument("--no-replay", dest="replay", action="store_false", help="check and write the trace only")
    p.add_argument("--timeline", metavar="FILE", help="write a Chrome trace-event JSON timeline (Perfetto)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--sweep", metavar="DIR", help="search layouts instead: the fastest that fits (table and plot "
                                                  "written to DIR)")
    p.add_argument("--limit", type=int, default=12, metavar="N",
                   help=f"--sweep: layouts replayed, best bound first (1-{MAX_REPLAYS}; default 12)")
    p.set_defaults(run=run_model, options_of_fields=OPTIONS_OF_FIELDS)


def run_model(args: argparse.Namespace) -> int:
    inputs = [*config_files(args.system), args.model]
    for path, flag in ((args.output, "--output"), (args.timeline, "--timeline")):
        if path is not None:
            check_output_file(path, flag, inputs=inputs)
    if args.sweep is not None:
        check_output_dir(args.sweep, "--sweep")
    model = load_model(args.model)
    system = load_arch(args.system, args.overrides)
    framework = _framework(args, chip_of(system))
    workload = validated(Workload, {"mode": args.mode, "seq_len": args.seq, "batch": 1 if args.batch is None else args.batch,
                                    "dtype": args.dtype})
    options = ReplayOptions(timeline=bool(args.timeline))
    if args.sweep is not None:
        return _sweep(args, model, workload, system, framework, options)
    layout = _layout(args, system.num_chips)
    if args.micro_batch is None and args.mode != "train" and args.batch is not None:
        # inference: a replica's whole batch at once, or one microbatch per stage when pipelined
        per_stage = max(1, args.batch // (layout.data_parallel * layout.pp))
        layout = validated(Layout, {**layout.model_dump(), "micro_batch": per_stage})
    if args.batch is None:
        per_replica = layout.micro_batch * (layout.pp * layout.virtual_stages if layout.pp > 1 else 1)
        workload = workload.model_copy(update={"batch": layout.data_parallel * per_replica})
    step = plan_step(model, workload, layout, framework, system)
    trace = step_trace(step)
    if not args.replay:
        if args.output:
            save_system_trace(trace, args.output)
        print(f"wrote {args.output}: {trace.num_ops} ops on {trace.num_devices} devices" if args.output
              else f"{trace.num_ops} ops on {trace.num_devices} devices (not replayed)")
        return 0
    result, replayed = run_step(step, trace, options=options)
    if args.output:  # after the replay: a step refused while replayed leaves no trace behind
        save_system_trace(trace, args.output)
    if args.timeline:
        write_json(args.timeline, chrome_trace(replayed), "--timeline")
    if args.json:
        print_json(result.to_json())
    else:
        print_result(result)
    return 0


def _framework(args: argparse.Namespace, chip: Chip) -> Framework:
    from dataclasses import replace

    default = "maxtext" if isinstance(chip, TpuChip) else ("megatron" if args.mode == "train" else INFERENCE_DEFAULT)
    base = framework_named(args.framework or default)
    changes = {"tp_overlap": args.tp_overlap or base.tp_overlap,
               "overlap_grad_reduce": args.overlap_grad_reduce and base.overlap_grad_reduce,
               "hidden_dropout": args.dropout and base.hidden_dropout,
               "attention_dropout": args.dropout and base.attention_dropout,
               "fused_cross_entropy": args.fused_cross_entropy or base.fused_cross_entropy}
    if args.gemm_impl:
        changes["gemm_impl"] = _implementation("gemm", args.gemm_impl, "--gemm-impl")
    if args.attention_impl:
        changes["attention_impl"] = _implementation("attention", args.attention_impl, "--attention-impl")
        _runs_on(chip, changes["attention_impl"])
    return replace(base, **changes)


def _implementation(family: str, name: str, flag: str) -> str:
    """``name`` once it is one of ``family``'s implementations, checked here: the step's
    kernels would otherwise refuse it deep in the built trace (or ``--no-replay`` write it)."""
    from accelsim.families import FAMILIES

    impl = next(p for p in FAMILIES.get(family).params if p.name == "impl")
    try:
        return impl.parse(name)
    except InputError as exc:
        raise InputError(exc.message, source=flag) from None


def _runs_on(chip: Chip, attention_impl: str) -> None:
    """Refuse an attention implementation the system's chip cannot run (FA3 on an A100)."""
    from accelsim.families import attention_impls

    try:
        attention_impls.resolve(attention_impl, chip)
    except InputError as exc:
        raise InputError(exc.message, source="--attention-impl") from None


def _layout(args: argparse.Namespace, chips: int) -> Layout:
    given = {name: getattr(args, name) for name in LAYOUT_OPTIONS if getattr(args, name) is not None}
    values = {**given, "zero": args.zero, "sequence_parallel": args.sequence_parallel, "recompute": args.recompute}
    if "dp" not in given:  # the devices the other degrees leave
        used = 1
        for name in ("tp", "pp", "cp", "fsdp"):
            used *= max(1, given.get(name, 1))
        values["dp"] = max(1, chips // used) if used <= chips else 1
    return validated(Layout, values)


def print_result(r: ModelStepResult) -> None:
    seconds = lambda value: format_quantity(value, "seconds")  # noqa: E731
    gb = lambda value: f"{value / 1e9:.1f} GB"  # noqa: E731
    mem = r.memory
    parts = [(k.removesuffix("_bytes").replace("_", " "), mem[k]) for k in
             ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "kv_cache_bytes")]
    rows = [
        ("model", f"{r.model}, {r.mode}, {r.tokens:,} tokens"),
        ("system", f"{r.step.system}: {r.layout} on {r.devices} devices ({r.framework}), "
                   f"{r.microbatches} microbatches"),
        ("step time", seconds(r.step_time_s)),
        ("tokens/s", f"{r.tokens_per_s:,.0f}"),
        ("MFU / HFU", f"{r.mfu:.1%} / {r.hfu:.1%} of {r.peak_flops_per_s / 1e12:.0f} TFLOP/s per device "
                      "(docs/model.md: FLOP conventions)"),
        ("memory", f"{gb(mem['total_bytes'])} of {gb(mem['capacity_bytes'])} per device (stage {mem['stage']}): "
                   + ", ".join(f"{name} {gb(v)}" for name, v in parts if v)),
        ("compute", seconds(r.step.compute_s)),
        ("exposed comm", f"{seconds(r.step.exposed_comm_s)} ({seconds(r.step.overlapped_comm_s)} overlapped)"),
        ("pipeline bubble", seconds(r.bubble_s)),
        ("idle", seconds(r.idle_s)),
        *([("energy", f"{r.energy_j:.4g} J per step, {r.average_power_w_per_device:.0f} W per device, "
                      f"{r.tokens_per_j:.4g} tokens/J (docs/power.md)")] if r.energy_j else []),
        ("simulated in", f"{r.step.sim_wall_s:.1f} s, {r.step.ops:,} device-ops, {r.step.replayed_classes} "
                         f"replayed device classes, {r.step.kernels_simulated} kernels"),
    ]
    print(table(("", ""), rows).split("\n", 2)[2])


# ---------------------------------------------------------------------- sweep


def _sweep(args, model, workload, system, framework, options) -> int:
    devices = system.num_chips
    if args.batch is None:
        raise InputError("--sweep needs --batch (the global batch every layout shares)", source="--batch")

    def progress(c: Candidate) -> None:
        if not args.json:
            what = f"{c.result.step_time_s:.4g} s, MFU {c.result.mfu:.1%}" if c.result else c.error
            print(f"  {c.layout.text():28} mb {c.layout.micro_batch} {c.layout.recompute:9} {what}", flush=True)

    ranked = search_layouts(model, workload, system, framework, devices=devices, limit=args.limit,
                            options=ReplayOptions(), progress=progress)
    out = Path(args.sweep)
    write_text_atomic(out / "layouts.csv", _csv(ranked))
    write_text_atomic(out / "layouts.md", _markdown(ranked, model.name, workload, system.name, framework.name))
    _plot(ranked, out / "layouts.png", f"{model.name} {workload.mode} on {devices} x {chip_of(system).name}")
    best = next((c for c in ranked if c.result is not None), None)
    if args.json:
        print_json({"best": best.result.to_json() if best else None,
                    "layouts": [_row(c) for c in ranked]})
    elif best is not None:
        print(f"fastest that fits: {best.layout.text()}, micro-batch {best.layout.micro_batch}, recompute "
              f"{best.layout.recompute}: {best.result.step_time_s:.4g} s, MFU {best.result.mfu:.1%} "
              f"({out / 'layouts.md'})")
    return 0


def _row(c: Candidate) -> dict:
    row = {"layout": c.layout.text(), **{k: getattr(c.layout, k) for k in (*LAYOUT_OPTIONS, "recompute")},
           "fits": c.fits, "memory_bytes": c.memory_bytes, "bound_s": c.bound_s, "error": c.error}
    if c.result is not None:
        row |= {"step_time_s": c.result.step_time_s, "tokens_per_s": c.result.tokens_per_s, "mfu": c.result.mfu}
    return row


def _csv(ranked: list[Candidate]) -> str:
    rows = [_row(c) for c in ranked]
    keys = list(dict.fromkeys(k for row in rows for k in row))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def _markdown(ranked: list[Candidate], model: str, workload: Workload, system: str, framework: str) -> str:
    lines = [f"# {model} {workload.mode} on {system}: layouts", "",
             f"Sequence {workload.seq_len}, global batch {workload.batch}, {framework}. Replayed layouts, fastest "
             "first; then the fitting layouts not replayed (by bound) and those that do not fit.", "",
             "| layout | micro-batch | recompute | memory GB | bound s | step s | tokens/s | MFU |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in ranked:
        r = c.result
        step = f"{r.step_time_s:.4g} | {r.tokens_per_s:,.0f} | {r.mfu:.1%}" if r else \
            ("does not fit | | " if not c.fits else (f"{c.error} | | " if c.error else "not replayed | | "))
        lines.append(f"| {c.layout.text()} | {c.layout.micro_batch} | {c.layout.recompute} | "
                     f"{c.memory_bytes / 1e9:.1f} | {c.bound_s:.4g} | {step} |")
    return "\n".join(lines) + "\n"


def _plot(ranked: list[Candidate], path: Path, title: str) -> None:
    from accelsim.figures import in_default_style, plt

    done = [c for c in ranked if c.result is not None]

    @in_default_style
    def draw() -> None:
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(done) + 1.5))
        labels = [f"{c.layout.text()} mb{c.layout.micro_batch} {c.layout.recompute}" for c in done]
        ax.barh(range(len(done)), [c.result.step_time_s for c in done], color="tab:blue", label="step (replayed)")
        ax.barh(range(len(done)), [c.bound_s for c in done], color="none", edgecolor="black", label="bound")
        ax.set_yticks(range(len(done)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("step time (s)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)

    draw()
