#!/usr/bin/env python3
"""MaxText's v5p training steps as the TPU compiler compiled them, replayed, against
MaxText's published TFLOP/s per chip and beside the hand-built steps; then the same
programs on v6e and TPU7x.

    python validation/maxtext/report_compiled.py [--out validation/reports/maxtext-v5p] [--only ID ...]

Reads ``compiled/ID.hlo.txt.gz`` (``compile_maxtext.py`` made them with MaxText's own
ahead-of-time compiler), imports each with ``accelsim import hlo`` and replays it on the
record's v5p slice. Predicted TFLOP/s per chip = MaxText's FLOP count per chip
(``maxtext_v5p.model_tflops_per_chip``, as the hand-built report uses) / the replayed
step time. XLA's own estimate beside it: the sum of the ``estimated_cycles`` of the ops
it estimated, at the v5p clock (compute only: XLA writes no estimate for collectives),
and accelsim's time for the same ops, each alone on the chip. The what-ifs replay the
same per-chip program on as many v6e chips (``tpu-v6e-8x8``: a 2D slice, 32 GB of HBM
per chip) and TPU7x chips (``tpu7x-4x4x4``): what the v5p program would take there, not
what XLA would compile for them. Writes ``compiled.md`` into ``--out``.

Two breakdowns say where the gap comes from. The step's matrix work against MaxText's
count: the clones XLA's HLO rematerialization pass made under memory pressure (its
``.remat`` names: ``xla/hlo/transforms/simplifiers/hlo_rematerialization.cc``), splash
attention (the blocks its block mask runs, ``accelsim/importers/hlo_splash.py``) and what the rest
exceeds 6 x parameters x tokens by (the forward the remat policy recomputes). And the
exposed communication op by op (``accelsim.system.timeline.exposed_comm_by_op``), by how
the schedule issues each collective: synchronous, asynchronous with nothing scheduled
between its start and the first op that waits for it, or with work between.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from maxtext_v5p import TORUS, load_records, model, model_tflops_terms  # noqa: E402

COMPILED = HERE / "compiled"
WHAT_IFS = {"v6e": ("tpu-v6e-8x8", {64: [], 128: ["shape=[8,16]"]}),
            "TPU7x": ("tpu7x-4x4x4", {64: [], 128: ["shape=[4,4,8]"]})}
"""Generation -> (system, chips -> overrides): the slices of as many chips as the v5p one."""


def replay_on(trace, system_name: str, overrides: list[str]) -> dict:
    from accelsim.arch.model import load_arch
    from accelsim.system.replay import replay

    result = replay(trace, load_arch(system_name, overrides)).result()
    return {"step_time_s": result.step_time_s, "compute_s": result.compute_s, "exposed_comm_s": result.exposed_comm_s}


def replay_compiled(record: dict, path: Path, what_ifs: bool = True) -> dict:
    from accelsim.arch.model import load_arch
    from accelsim.importers.hlo import import_hlo
    from accelsim.importers.hlo_estimates import compare_with_xla
    from accelsim.system.replay import ReplayOptions, chip_of, replay

    shape = [f"shape={json.dumps(TORUS[record['chips']])}"]
    started = time.perf_counter()
    trace = import_hlo(path, system_devices=record["chips"], system="tpu-v5p")
    v5p_system = load_arch("tpu-v5p-4x4x8", shape)
    replayed = replay(trace, v5p_system, options=ReplayOptions(timeline=True))
    result = replayed.result()
    v5p = {"step_time_s": result.step_time_s, "compute_s": result.compute_s, "exposed_comm_s": result.exposed_comm_s}
    first_use = replay(trace, v5p_system, options=ReplayOptions(wait_at_first_use=True)).result()
    v5p["first_use"] = {"step_time_s": first_use.step_time_s, "exposed_comm_s": first_use.exposed_comm_s}
    chip = chip_of(v5p_system)
    xla = compare_with_xla(trace, chip)
    what_ifs = {gen: replay_on(trace, system, chips[record["chips"]]) for gen, (system, chips) in WHAT_IFS.items()
                if what_ifs and record["chips"] in chips}
    learnable, attention = model_tflops_terms(model(record["global_parameter_scale"]), record["per_device_batch_size"])
    tflops = learnable + attention
    totals = trace.metadata["per_device_totals"]
    return {**v5p, "model_tflops": tflops, "tflops_per_chip": tflops / v5p["step_time_s"], "xla": xla,
            "what_ifs": what_ifs, "counts": trace.metadata["importer_counts"], "ops": len(trace.programs[0].ops),
            "matrix": {**matrix_terms(trace), "learnable": learnable * 1e12, "causal_attention": attention * 1e12},
            "exposure": exposure_by_schedule(trace, replayed),
            "matrix_tflops": totals["matrix_flops"] / 1e12, "hbm_tb": totals["compute_bytes"] / 1e12,
            "comm_gb": {kind: totals[f"{kind}_bytes"] / 1e9 for kind in
                        ("all-gather", "reduce-scatter", "all-reduce", "collective-permute") if f"{kind}_bytes" in totals},
            "on_chip_tb": totals["on_chip_bytes"] / 1e12, "rates": chip_rates(chip), "wall_s": time.perf_counter() - started}


def matrix_terms(trace) -> dict[str, float]:
    """The trace's matrix flops per device: all, the clones XLA's HLO rematerialization
    pass made (an instruction's copy, named ``NAME.rematN``, recomputing a value it chose
    not to keep in HBM), and splash attention's (the blocks its block mask runs)."""
    from accelsim.importers.hlo_splash import SPLASH_KERNEL

    terms = {"all": 0.0, "xla_remat": 0.0, "splash": 0.0}
    for op in trace.programs[0].ops:
        if op.kind != "compute" or op.unit != "matrix" or not op.flops:
            continue
        own = op.name.rsplit("/", 1)[-1]
        terms["all"] += op.flops
        if ".remat" in own:
            terms["xla_remat"] += op.flops
        elif SPLASH_KERNEL.match(own):
            terms["splash"] += op.flops
    return terms


SCHEDULE_FORMS = ("synchronous", "async, nothing between", "async, work between")
"""How a compiled schedule issues a collective: as one blocking op; started and waited for
with no compute op scheduled between the start and the first op that waits for it (its
done, or an op that uses its result); or with compute scheduled between."""


def schedule_form(ops: list, i: int) -> str:
    """The :data:`SCHEDULE_FORMS` entry of communication op ``ops[i]`` (schedule order)."""
    op = ops[i]
    if not op.is_async:
        return SCHEDULE_FORMS[0]
    for later in ops[i + 1:]:
        if (later.kind == "done" and later.start == op.name) or op.name in later.deps:
            return SCHEDULE_FORMS[1]
        if later.kind == "compute":
            return SCHEDULE_FORMS[2]
    return SCHEDULE_FORMS[2]


def exposure_by_schedule(trace, replayed) -> dict[tuple[str, str], dict[str, float]]:
    """Per (schedule form, collective kind): the ops, their time in flight and the part of
    it exposed (no compute running), on the replayed class of the trace's program."""
    from accelsim.system.timeline import exposed_comm_by_op

    ops = trace.programs[0].ops
    forms = {op.name: (schedule_form(ops, i), op.kind) for i, op in enumerate(ops)
             if op.kind not in ("compute", "done")}
    exposed = exposed_comm_by_op(replayed)
    rows: dict[tuple[str, str], dict[str, float]] = defaultdict(
        lambda: {"ops": 0, "in_flight_s": 0.0, "exposed_s": 0.0})
    for seg in replayed.segments:
        if seg.track == 0 and seg.name in forms and seg.lane != "comm":
            row = rows[forms[seg.name]]
            row["ops"] += 1
            row["in_flight_s"] += (seg.end_ps - seg.start_ps) / 1e12
            row["exposed_s"] += exposed.get((0, seg.name), 0.0)
    return dict(rows)


def chip_rates(chip) -> dict:
    """What bounds a fusion beyond flops and HBM bytes, from the chip's cited figures: the
    fixed cost per program (``cores.program_overhead``: the Pallas docs' 0.35 us per grid
    step) and VMEM's load/store rate (``local_memory.bandwidth_bytes_per_cycle``: the JAX
    scaling book's 3 vreg loads and 1 store per cycle per core), beside the HBM rate the
    replay prices bytes at."""
    return {"program_overhead_s": chip.program_overhead_s,
            "vmem_bytes_per_s": chip.local.bandwidth_bytes_per_cycle * chip.num_cores * chip.clock_hz,
            "hbm_bytes_per_s": chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency}


VARIANTS = {"sparsecore": ", all-gathers on the SparseCores (maxtext 0.2.5's 32b.sh flags)",
            "no-memory-tracking": ", XLA's scheduler not tracking memory pressure (a diagnostic: "
                                  "`compile_maxtext.py --flags no-memory-tracking`)",
            "batch": " (a diagnostic below the config's batch: `compile_maxtext.py --batch`)",
            "tp": ", tensor parallelism {tp} over a split physical axis (a diagnostic: `compile_maxtext.py --tp`)"}
"""Variant of a record's compiled program -> what its row's label adds."""


def _label(record: dict) -> str:
    return (f"{record['hardware']}, {record['model']}, batch {record['per_device_batch_size']}"
            + VARIANTS.get(record.get("variant"), "").format(tp=record["ici_tensor_parallelism"]))


def compiled_steps(record: dict) -> list[tuple[dict, Path]]:
    """The record's compiled programs: with the config scripts' flags, with the other flag
    sets of ``compile_maxtext.py --flags`` (``ID-sparsecore``, ``ID-no-memory-tracking``)
    at other batches (``--batch N``: ``ID-batchN``) and tensor parallelisms (``--tp N``:
    ``ID-tpN``) where compiled."""
    steps = [(record, COMPILED / f"{record['id']}.hlo.txt.gz")]
    for flags in ("sparsecore", "no-memory-tracking"):
        path = COMPILED / f"{record['id']}-{flags}.hlo.txt.gz"
        if path.exists():
            steps.append(({**record, "id": f"{record['id']}-{flags}", "variant": flags}, path))
    for path in sorted(COMPILED.glob(f"{record['id']}-batch*.hlo.txt.gz")):
        variant_id = path.name.removesuffix(".hlo.txt.gz")
        batch = int(variant_id.rsplit("-batch", 1)[1])
        steps.append(({**record, "id": variant_id, "variant": "batch", "per_device_batch_size": batch}, path))
    for path in sorted(COMPILED.glob(f"{record['id']}-tp*.hlo.txt.gz")):
        variant_id = path.name.removesuffix(".hlo.txt.gz")
        tp = int(variant_id.rsplit("-tp", 1)[1])
        steps.append(({**record, "id": variant_id, "variant": "tp", "ici_tensor_parallelism": tp}, path))
    return steps


def fusion_bounds(record: dict, row: dict) -> str:
    """Whether a fixed cost per fusion or VMEM's load/store rate explains why XLA's
    estimates of the elementwise fusions and copies exceed accelsim's."""
    xla, rates = row["xla"], row["rates"]
    kinds = {kind.kind: kind for kind in xla.by_kind()}
    fixed_s = len(xla.ops) * rates["program_overhead_s"]
    through_vmem_s = (row["hbm_tb"] + row["on_chip_tb"]) * 1e12 / rates["vmem_bytes_per_s"]
    implied = ", ".join(f"{name} {kinds[name].xla_hbm_bytes_per_s / 1e12:.2f} TB/s" for name in ("kLoop", "copy")
                        if name in kinds)
    windows = sum(round(op.xla_s * xla.clock_hz / op.xla_cycles_per_window) for op in xla.ops
                  if op.xla_cycles_per_window)
    per_window = kinds["kLoop"].fewest_xla_cycles_per_window or 0.0
    return (f"- {record['id']}, per fusion: a fixed {rates['program_overhead_s'] * 1e6:.2f} us per op (the chip's "
            f"`cores.program_overhead`) adds {fixed_s * 1e3:.1f} ms over the {len(xla.ops)} ops XLA estimated "
            f"(its smallest kLoop estimate is {kinds['kLoop'].fewest_xla_s * 1e6:.2f} us); XLA tiles them into "
            f"{windows} windows (counting loop trips) and charges a kLoop window at least {per_window:.0f} cycles, "
            f"and the same fixed cost per window, in series on each of the two TensorCores, would add "
            f"{windows * rates['program_overhead_s'] / 2:.2f} s; every HBM and on-chip "
            f"byte loaded into and stored from vregs at VMEM's rate ({rates['vmem_bytes_per_s'] / 1e12:.0f} TB/s per "
            f"chip) takes {through_vmem_s * 1e3:.0f} ms. Neither closes the gap: XLA's estimates of the large "
            f"fusions imply HBM rates of {implied} against the "
            f"{rates['hbm_bytes_per_s'] / 1e12:.2f} TB/s accelsim prices bytes at (the published 2765 GB/s, 0.9 "
            f"efficiency): a rate difference on its large fusions (tens of ms each), not a fixed cost. XLA's TPU "
            f"cost model is not public, so what sets its rate is not known; accelsim keeps the published one.")


def matrix_section(rows: list[tuple[dict, dict]]) -> list[str]:
    """Where the step's matrix TFLOP per chip go, against MaxText's count."""
    lines = ["", "## The matrix work per chip, against MaxText's count", "",
             "MaxText's count: 6 x parameters x tokens (the weights' matmuls, forward and backward) plus causal "
             "attention (half the (query, key) pairs). accelsim's, from the compiled program: the clones XLA's "
             "HLO rematerialization pass made under memory pressure (`NAME.rematN`: recomputed, not kept in HBM), "
             "splash attention (the blocks its block mask runs: the causal mask at 512-wide blocks over 2048 "
             "tokens runs 10 of 16, 1.25x MaxText's causal count, the diagonal's blocks computed whole; plus the "
             "forward the remat policy recomputes; *dense*: a program whose text elides the mask, every block "
             "counted, 2x), and the other matmuls less 6 x parameters x tokens: the layer forward the "
             "remat policy recomputes in the backward. None of it is counted twice: each is an instruction of "
             "the schedule. A rest below zero means some clones moved a matmul (the original gone) rather than "
             "repeat it.", "",
             "| run | accelsim | MaxText's count | XLA's remat clones | splash attention (MaxText: causal "
             "attention) | other matmuls less 6 x params x tokens (remat policy) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for record, row in rows:
        m = {key: value / 1e12 for key, value in row["matrix"].items()}
        rest = m["all"] - m["xla_remat"] - m["splash"] - m["learnable"]
        dense = " *dense*" if any(key.startswith("splash_attention_dense:") for key in row["counts"]) else ""
        lines.append(f"| {record['id']} ({record['remat_policy']}) | {m['all']:.0f} | "
                     f"{m['learnable'] + m['causal_attention']:.0f} | {m['xla_remat']:.0f} | {m['splash']:.0f}{dense} "
                     f"({m['causal_attention']:.0f}) | {rest:+.0f} |")
    return lines


def exposure_section(rows: list[tuple[dict, dict]]) -> list[str]:
    """The exposed communication, by how the schedule issues each collective."""
    lines = ["", "## Where the exposed communication is", "",
             "Each collective's time in flight on v5p (ops of a folded loop carry all its trips) and the part of "
             "it no compute op overlaps (`exposed_comm_by_op`: shared equally where several are in flight; the "
             "column sums to the step's exposed communication), by how the compiled schedule issues it: "
             "synchronous (one blocking op), async with nothing scheduled between its start and the first op "
             "that waits for it, or async with work between. The ICI rates these imply are the torus's: a "
             "collective-permute to a neighbour at one link's 90 GB/s one way, an all-gather over a 4-chip ring "
             "at 180 GB/s of bus bandwidth, over a 4x4 torus at 360 GB/s (the JAX scaling book's v5p link, "
             "`tpu-v5p`).", "",
             "| run | schedule | kind | ops | in flight | exposed |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for record, row in rows:
        order = {form: k for k, form in enumerate(SCHEDULE_FORMS)}
        for (form, kind), cell in sorted(row["exposure"].items(),
                                         key=lambda item: (order[item[0][0]], -item[1]["exposed_s"], item[0][1])):
            lines.append(f"| {record['id']} | {form} | {kind} | {cell['ops']} | {cell['in_flight_s']:.3f} s | "
                         f"{cell['exposed_s']:.3f} s |")
    return lines


def exposure_summary(record: dict, row: dict) -> str:
    """How much of the exposed communication the schedule leaves nothing to overlap with."""
    unhidden = sum(cell["exposed_s"] for (form, _), cell in row["exposure"].items() if form != SCHEDULE_FORMS[2])
    total = sum(cell["exposed_s"] for cell in row["exposure"].values())
    share = unhidden / total if total else 0.0
    first_use = row["first_use"]
    return (f"- {record['id']}, exposed communication: {unhidden:.2f} s of the {total:.2f} s ({share:.0%}) is "
            f"collectives the schedule issues synchronously or waits for with nothing scheduled in between: no "
            f"replay of this schedule can hide it. Waited for at first use instead (the what-if), "
            f"{first_use['exposed_comm_s']:.2f} s stays exposed: synchronous collectives and transfers whose "
            f"result the next ops need.")


def first_use_cell(record: dict, row: dict) -> str:
    """The what-if's step, its TFLOP/s per chip and error, and what stays exposed."""
    first_use = row["first_use"]
    tflops = row["model_tflops"] / first_use["step_time_s"]
    return (f"{first_use['step_time_s']:.3f} s, {tflops:.0f} ({tflops / record['tflops_per_chip'] - 1:+.1%}), "
            f"exposed {first_use['exposed_comm_s']:.3f} s")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def report(rows: list[tuple[dict, dict]], refused: list[tuple[dict, str]]) -> str:
    lines = [
        "# MaxText on TPU v5p, as the TPU compiler compiled it",
        "",
        "Generated by `python validation/maxtext/report_compiled.py` from the HLO that MaxText's own "
        "ahead-of-time compiler wrote for published single-slice configs "
        "(`validation/maxtext/compile_maxtext.py`: maxtext 0.2.5, jax 0.12.1, libtpu 0.0.52, the config "
        "scripts' flags and LIBTPU_INIT_ARGS but for all-gather continuation fusion, which this libtpu refuses "
        "on a v5p), imported with `accelsim import hlo` and replayed on the record's v5p slice (`tpu-v5p` as "
        "published, nothing fitted). Predicted TFLOP/s per chip = MaxText's FLOP count per chip / the replayed "
        "step; error = predicted / measured - 1. Hand-built steps: [report.md](report.md).",
        "",
        "| run | measured TFLOP/s/chip | compiled step, replayed | step time | compute | exposed comm | "
        "matrix TFLOP per chip (MaxText's count) | what-if: async collectives waited for at first use |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for record, row in rows:
        error = row["tflops_per_chip"] / record["tflops_per_chip"] - 1
        lines.append(f"| {_label(record)} | "
                     f"{record['tflops_per_chip']} | {row['tflops_per_chip']:.0f} ({error:+.1%}) | "
                     f"{row['step_time_s']:.3f} s | {row['compute_s']:.3f} s | {row['exposed_comm_s']:.3f} s | "
                     f"{row['matrix_tflops']:.0f} ({row['model_tflops']:.0f}) | {first_use_cell(record, row)} |")
    lines += [f"| {_label(record)} | {record['tflops_per_chip']} | not replayed | - | - | - | - | - |"
              for record, _ in refused]
    lines += ["", "The what-if column replays the same program with every async collective waited for at the "
              "first op that uses its result instead of at the `done` XLA scheduled (`accelsim replay "
              "--wait-at-first-use`; docs/replay.md): the overlap the program's dependencies allow in its own "
              "order, where XLA's scheduler holds transfers back under memory pressure. A bound on the schedule, "
              "not a prediction: synchronous collectives stay synchronous."]
    if refused:
        lines += ["", "Compiled and committed but not replayed (the replay refuses them before it starts):", ""]
        lines += [f"- {record['id']}: {reason}" for record, reason in refused]
    lines += matrix_section(rows) + exposure_section(rows)
    lines += ["", "## XLA's estimates beside accelsim's, per step", "",
              "XLA: the sum of the `estimated_cycles` XLA's TPU cost model wrote for each op, at 1.75 GHz (compute "
              "only; XLA writes none for collectives or the DMAs it schedules). accelsim: the same ops, each alone "
              "on the chip as the replay prices it. By kind, XLA's least cycles per window: over the kind's ops "
              "that XLA tiled (their `window_config.iteration_bounds`: the op runs as a pipelined loop over that "
              "many windows), the least of an op's cycles over its windows, at most what XLA charges a window "
              "whatever its bytes.", "",
              "| run | ops XLA estimated | XLA | accelsim | ops without an estimate (accelsim) |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for record, row in rows:
        xla = row["xla"]
        if xla is None:
            lines.append(f"| {record['id']} | 0 | - | - | - |")
            continue
        lines.append(f"| {record['id']} | {len(xla.ops)} | {xla.xla_s:.3f} s | {xla.accelsim_s:.3f} s | "
                     f"{xla.unestimated_ops} ({xla.unestimated_s:.3f} s) |")
    for record, row in rows:
        if row["xla"] is None:
            continue
        lines += ["", f"By kind, {record['id']}:", "",
                  "| kind | ops | XLA | accelsim | accelsim / XLA | HBM bytes / XLA's time | XLA's smallest op | "
                  "XLA's least cycles per window |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for kind in row["xla"].by_kind():
            ratio = f"{kind.accelsim_s / kind.xla_s:.2f}" if kind.xla_s else "-"
            window = "-" if kind.fewest_xla_cycles_per_window is None else f"{kind.fewest_xla_cycles_per_window:.0f}"
            lines.append(f"| {kind.kind} | {kind.ops} | {kind.xla_s:.3f} s | {kind.accelsim_s:.3f} s | {ratio} | "
                         f"{kind.xla_hbm_bytes_per_s / 1e12:.2f} TB/s | {kind.fewest_xla_s * 1e6:.2f} us | {window} |")
    lines += ["", "## How to read this", ""]
    for record, row in rows:
        xla = row["xla"]
        if xla is None:
            continue
        compute_only = row["model_tflops"] / (xla.xla_s + xla.unestimated_s)
        lines.append(
            f"- {record['id']}: XLA's own estimates of the step's compute (plus accelsim's for the ops XLA left "
            f"unestimated, splash attention among them) allow at most {compute_only:.0f} TFLOP/s per chip "
            f"({compute_only / record['tflops_per_chip'] - 1:+.1%} against the measurement) with every collective "
            f"hidden; accelsim's compute alone gives {row['model_tflops'] / row['compute_s']:.0f}. The rest of the "
            f"gap is the {row['exposed_comm_s']:.2f} s of communication the replay leaves exposed.")
        lines.append(exposure_summary(record, row))
        lines.append(fusion_bounds(record, row))
    lines += [
        "",
        "This libtpu compiles MaxText's v5p configs into a different program from the one measured: the "
        "README's figures were committed in December 2023 with the config scripts' flags (less the "
        "`fuse_all_gather` one, added later) at larger batches (64B 4, 128B and 256B 2), which today's "
        "MaxText no longer fits in HBM (`compile_maxtext.py`); with all-gather continuation fusion refused on "
        "a v5p, the FSDP and tensor-parallel all-gathers are synchronous ops in the schedule. In the 64B "
        "programs at the record's batch 3 (tensor parallelism 4) almost every collective-permute also has its "
        "done right after its start: the tensor-parallel reduce-scatters XLA decomposed into permutes, and "
        "the permutes inside its windowed-einsum (collective matmul) loops too, which exist to run beside the "
        "loop's matmul; in the 128B-512B programs (tensor parallelism 8) XLA schedules most permutes beside "
        "work and the replay hides them as scheduled (\"Where the exposed communication is\"). The 64B's bare "
        "permutes go with its batch: the same config and flags compiled at batch 2 (`-batch2`) schedule most "
        "of its permutes beside work, and so does batch 3 compiled with XLA's scheduler not tracking memory "
        "pressure (`-no-memory-tracking`, with more remat clones): XLA holds the permutes back to keep the "
        "step within HBM (each permute in flight holds its receive buffer). With maxtext 0.2.5's "
        "`32b.sh` flags (`--flags sparsecore`: all-gathers offloaded to the SparseCores) XLA moves the "
        "tensor-parallel activation all-gathers of the layer loop to the SparseCores as asynchronous custom "
        "calls, but each one's input reaches it at its `custom-call-update`, one or two instructions before "
        "its done, so they still overlap almost nothing; the FSDP all-gathers and the permutes stay as they "
        "were. The replay takes the schedule as written; the measured step must have overlapped what these do "
        "not.",
    ]
    lines += ["", "## The same programs on v6e and TPU7x", "",
              "The v5p program replayed unchanged on as many chips of another generation (`tpu-v6e-8x8`, "
              "`tpu7x-4x4x4`, as published): a what-if on the chip and its links, not what XLA would compile for "
              "them (v6e has 32 GB of HBM per chip, too little for these steps).", "",
              "| run | v5p | " + " | ".join(WHAT_IFS) + " |", "| --- | ---: | " + " | ".join("---:" for _ in WHAT_IFS) + " |"]
    for record, row in rows:
        if not row["what_ifs"]:
            continue
        cells = [f"{row['what_ifs'][gen]['step_time_s']:.3f} s ({row['model_tflops'] / row['what_ifs'][gen]['step_time_s']:.0f} "
                 f"TFLOP/s/chip, exposed comm {row['what_ifs'][gen]['exposed_comm_s']:.3f} s)"
                 if gen in row["what_ifs"] else "-" for gen in WHAT_IFS]
        lines.append(f"| {record['id']} | {row['step_time_s']:.3f} s ({row['tflops_per_chip']:.0f} TFLOP/s/chip) | "
                     + " | ".join(cells) + " |")
    lines += ["", "## What the importer estimated or skipped, per run", ""]
    for record, row in rows:
        counts = ", ".join(f"{k} x{v}" for k, v in row["counts"].items()) or "none"
        comm = ", ".join(f"{kind} {gb:.1f} GB" for kind, gb in row["comm_gb"].items())
        lines.append(f"- {record['id']} ({row['ops']} ops per device; per device {row['hbm_tb']:.2f} TB of HBM "
                     f"traffic; {comm}): {counts}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(HERE.parents[0] / "reports" / "maxtext-v5p"))
    parser.add_argument("--only", nargs="*", help="compiled programs to replay, by id (ID or ID-VARIANT; default: all); "
                                                  "a report of some is for checking, not to commit")
    args = parser.parse_args(argv)
    from accelsim.errors import InputError

    rows, refused = [], []
    for record, path in [step for record in load_records() if record["slices"] == 1 for step in compiled_steps(record)]:
        if not path.exists() or (args.only and record["id"] not in args.only):
            continue
        try:
            rows.append((record, replay_compiled(record, path, what_ifs="variant" not in record)))
        except InputError as error:  # the replay's own bounds: reported, not hidden
            refused.append((record, str(error)))
            print(f"{record['id']}: not replayed: {error}")
            continue
        print(f"{record['id']}: {rows[-1][1]['tflops_per_chip']:.0f} TFLOP/s/chip "
              f"(measured {record['tflops_per_chip']}), {rows[-1][1]['wall_s']:.1f} s")
    if not rows:
        raise SystemExit(f"no compiled steps in {COMPILED} replayed: run compile_maxtext.py first")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "compiled.md").write_text(report(rows, refused), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
