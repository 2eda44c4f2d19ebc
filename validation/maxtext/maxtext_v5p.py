#!/usr/bin/env python3
"""MaxText training steps on TPU v5p, as system traces, against MaxText's published MFU.

    python validation/maxtext/maxtext_v5p.py [--out validation/reports/maxtext-v5p]

MaxText publishes, for its v5p configs (``MaxText/configs/v5p/*.sh``), the TFLOP/s per chip
its training loop measured (``MaxText/configs/v5p/README.md``; the records are in
``v5p_mfu.json`` beside this script, each with its source). This script rebuilds each run
(one slice, or two slices over the DCN) as a system trace: the model MaxText builds from ``global_parameter_scale``
(``base.yml``: emb 2048, 16 heads of 128, MLP 7168, 16 layers, vocab 32000, gated SiLU MLP,
scaled as ``get_individual_scales`` does), sharded as the config says
(``ici_tensor_parallelism`` = TP over the innermost torus axis, FSDP over the rest), and
replays it on the v5p torus of that size. Predicted TFLOP/s per chip = MaxText's own model
FLOPs per chip (the PaLM appendix-B count its ``calculate_tflops_training_per_device``
used: 6 x parameters x tokens + causal attention) / the replayed step time.

The step is built by ``accelsim.model`` (docs/model.md) with the ``maxtext`` framework:
per layer, on every chip (SPMD), forward all-gathers the layer's fp32 weight shard over
the FSDP group (prefetched one layer ahead, as XLA's async collective fusion does),
all-gathers the activations over the TP group (MaxText shards ``activation_embed`` over
``tensor``: sequence parallel), runs QKV, flash attention, O (reduce-scatter over TP),
gate+up and down (reduce-scatter over TP) as the built-in ``gemm`` / ``attention`` families
with ``config=auto`` (XLA tiles its own dots; the best block shapes stand in for its
choice); the backward mirrors it, recomputes what the remat policy drops (``minimal``:
the attention forward, the model's ``selective``; ``full``: the whole layer forward) and
reduce-scatters the fp32 weight gradients over FSDP (async, waited for before the
optimizer update); on two slices each chip's gradient shard is then all-reduced across the
slices over the DCN on its own stream. The output projection's weights are gathered and
its gradients reduce-scattered like a layer's. Norms, SiLU and residual adds are fused
into the matmuls' fusions (no kernels of their own); the embedding lookup is left out.

TP collectives, two treatments (both replayed): the XLA default (a collective waits for its
input, the GEMM that needs it waits for it, independent work overlaps it) and collective
matmul (each TP collective entirely beside the GEMM it feeds or drains, an optimistic
bound).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from accelsim.model.spec import ModelSpec  # noqa: E402

SEQ = 2048
BASE = {"emb": 2048, "heads": 16, "mlp": 7168, "layers": 16, "head_dim": 128, "vocab": 32000}
"""MaxText ``base.yml``: base_emb_dim, base_num_query_heads (= kv heads), base_mlp_dim,
base_num_decoder_layers, head_dim, vocab_size."""
TORUS = {64: [4, 4, 4], 128: [4, 4, 8], 256: [4, 8, 8], 512: [8, 8, 8], 1024: [8, 8, 16], 2048: [8, 16, 16]}
"""Chips -> v5p slice shape (Cloud TPU docs, "TPU v5p" topology table: v5p-128 is 4x4x4, ...)."""
MULTISLICE = "tpu-v5p-8x8x8-x2"
"""Slices of v5p joined over the DCN (6.25 GB/s per chip, Cloud TPU docs); its slice shape
and count are set per record."""


def model(scale: int) -> ModelSpec:
    """MaxText's ``get_individual_scales``: every power of 2 doubles, in turn, heads and
    MLP width, then the embedding width, then the layers."""
    log2 = int(math.log2(scale))
    if 2**log2 != scale:
        raise ValueError(f"global_parameter_scale must be a power of 2, got {scale}")
    base, rem = divmod(log2, 3)
    heads_scale = base + int(rem > 0)
    emb_scale = base + int(rem > 1)
    heads = BASE["heads"] * 2**heads_scale
    return ModelSpec(name=f"maxtext-{scale}b", layers=BASE["layers"] * 2**base, hidden=BASE["emb"] * 2**emb_scale,
                     heads=heads, kv_heads=heads, head_dim=BASE["head_dim"], ffn=BASE["mlp"] * 2**heads_scale,
                     vocab=BASE["vocab"], source="MaxText base.yml scaled by global_parameter_scale")


def model_tflops_per_chip(m: ModelSpec, per_chip_batch: int) -> float:
    """MaxText's count (PaLM appendix B): 6 x parameters x tokens, plus causal attention."""
    return sum(model_tflops_terms(m, per_chip_batch))


def model_tflops_terms(m: ModelSpec, per_chip_batch: int) -> tuple[float, float]:
    """MaxText's count per chip in its two terms, TFLOP: the weights' matmuls (6 x
    parameters x tokens: forward and the two backward matmuls) and causal attention
    (forward and backward, half the (query, key) pairs)."""
    tokens = per_chip_batch * SEQ
    learnable = 6 * m.params * tokens
    attention = 12 * m.heads * m.layers * m.head_dim * SEQ**2 * per_chip_batch / 2
    return learnable / 1e12, attention / 1e12


# ---------------------------------------------------------------------------- the step


def model_step(record: dict, tp_overlap: bool = True, system: str = "tpu-v5p-4x4x8"):
    """The record's run as an ``accelsim model`` step: TP over the innermost torus axis, FSDP
    over the rest of the slice, data parallel across slices; one microbatch of the TP group's
    sequences; MaxText's remat ``minimal`` is selective recompute (the attention forward)."""
    from accelsim.arch.model import load_arch
    from accelsim.model.layout import FRAMEWORKS, Layout, Workload
    from accelsim.model.step import plan_step

    chips, slices, tp = record["chips"], record.get("slices", 1), record["ici_tensor_parallelism"]
    shape = json.dumps(TORUS[chips])
    if slices > 1:
        arch = load_arch(MULTISLICE, [f"slice.shape={shape}", f"slices={slices}"])
    else:
        arch = load_arch(system, [f"shape={shape}"])
    batch = record["per_device_batch_size"]
    workload = Workload(mode="train", seq_len=SEQ, batch=batch * chips * slices)
    layout = Layout(tp=tp, fsdp=chips // tp, dp=slices, micro_batch=batch * tp,
                    recompute={"minimal": "selective", "full": "full"}[record["remat_policy"]])
    framework = replace(FRAMEWORKS["maxtext"], tp_overlap=tp_overlap)
    return plan_step(model(record["global_parameter_scale"]), workload, layout, framework, arch)


# ---------------------------------------------------------------------------- comparing


def load_records() -> list[dict]:
    return json.loads((HERE / "v5p_mfu.json").read_text(encoding="utf-8"))["records"]


_COSTS: list = []
"""One kernel-cost cache per chip, shared by every replay of the run (each record is replayed
twice, and the same GEMM and attention shapes recur across records)."""


def predict(record: dict, tp_overlap: bool = True, system: str = "tpu-v5p-4x4x8") -> dict:
    from accelsim.model.step import run_step, step_trace
    from accelsim.system.costs import CostModel

    started = time.perf_counter()
    step = model_step(record, tp_overlap, system)
    costs = next((c for c in _COSTS if c.chip == step.chip), None)
    if costs is None:
        costs = CostModel(step.chip, Path("."))
        _COSTS.append(costs)
    result, _ = run_step(step, step_trace(step), costs=costs)
    tflops = model_tflops_per_chip(step.shape.model, record["per_device_batch_size"])
    return {"step_time_s": result.step_time_s, "tflops_per_chip": tflops / result.step_time_s,
            "model_tflops_per_chip": tflops, "compute_s": result.step.compute_s,
            "exposed_comm_s": result.step.exposed_comm_s, "wall_s": time.perf_counter() - started,
            "ops": result.step.ops, "memory_gb": result.memory["total_bytes"] / 1e9}


def report(rows: list[tuple[dict, dict, dict]], wall_s: float) -> str:
    lines = [
        "# MaxText on TPU v5p: predicted vs measured training throughput",
        "",
        "Generated by `python validation/maxtext/maxtext_v5p.py` (replays in "
        f"{wall_s:.0f} s on this 2-core machine). Measured: MaxText's own TFLOP/s per chip for its v5p "
        "configs (`validation/maxtext/v5p_mfu.json`, each record with its source). Predicted: MaxText's "
        "FLOP count per chip / the step time `accelsim replay` gives for the step rebuilt from the config "
        "(see the script's docstring for what the trace holds) on `tpu-v5p` as published (nothing fitted: "
        "matrix efficiency 0.85 and ICI figures are the config's estimates). Error = predicted / measured - 1.",
        "",
        "Two treatments of the tensor-parallel activation collectives (all-gather before each "
        "column-parallel GEMM, reduce-scatter after each row-parallel one): **XLA default** - a "
        "collective waits for its input and the GEMM that needs it waits for it; it overlaps only "
        "independent work (in the backward the weight-gradient GEMMs run beside the data-gradient "
        "collectives), which is what XLA's async collectives give without windowed-einsum "
        "(collective matmul) flags, and none of these configs sets them; **collective matmul** - each "
        "TP collective runs entirely beside the GEMM it feeds or drains (perfect decomposition: an "
        "optimistic bound).",
        "",
        "| run | model, chips, TP, batch/chip, remat | measured TFLOP/s/chip (MFU) | XLA default | "
        "collective matmul | step time (XLA default) | exposed comm |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    errors = []
    for record, overlapped, serial in rows:
        measured = record["tflops_per_chip"]
        e_serial = serial["tflops_per_chip"] / measured - 1
        e_overlap = overlapped["tflops_per_chip"] / measured - 1
        errors.append((record, e_serial, e_overlap))
        lines.append(
            f"| {record['hardware']} | {record['model']}, {record['chips']} chips, TP {record['ici_tensor_parallelism']}, "
            f"{record['per_device_batch_size']}, {record['remat_policy']} | {measured:.0f} ({record['mfu']:.1%}) | "
            f"{serial['tflops_per_chip']:.0f} ({e_serial:+.1%}) | {overlapped['tflops_per_chip']:.0f} ({e_overlap:+.1%}) | "
            f"{serial['step_time_s']:.2f} s | {serial['exposed_comm_s']:.2f} s |")
    one = [(r, e, o) for r, e, o in errors if r.get("slices", 1) == 1]
    two = [(r, e, o) for r, e, o in errors if r.get("slices", 1) > 1]
    minimal = [abs(e) for r, e, _ in one if r["remat_policy"] == "minimal"]
    lines += [
        "",
        f"One slice, XLA default: max |error| {max(minimal):.1%} over the {len(minimal)} `remat_policy=minimal` "
        f"runs, {max(abs(e) for _, e, _ in one):.1%} over all {len(one)}. Collective matmul: "
        f"{min(e for _, _, e in one):+.1%} to {max(e for _, _, e in one):+.1%}.",
        "",
    ]
    if two:
        lines += [
            f"Two slices over the DCN, XLA default: {min(e for _, e, _ in two):+.1%} to "
            f"{max(e for _, e, _ in two):+.1%}. **The multislice model is too optimistic**: each layer's "
            "fp32 gradient shard is all-reduced across the slices over the DCN (6.25 GB/s per chip, the Cloud "
            "TPU docs' figure) on its own stream as soon as its FSDP reduce-scatter ends, so the replay hides "
            "it behind the rest of the backward and predicts two slices within 0.2% of one; MaxText measured "
            "2.7-13.3% less per chip on two slices. Even with all of it exposed at the end of the step the "
            "128B run on 2 x 256 chips would lose about 6.5%, not the measured 13.3%: the DCN path is slower, "
            "or less overlapped, than modelled; DCN latency and bandwidth are estimates to fit once a multislice "
            "step or a DCN collective is measured.",
            "",
        ]
    lines += [
        "How to read this. The script was first written with collective matmul as *the* prediction and the "
        "XLA default as a pessimistic bound; run against the records, the XLA default is the one that "
        "matches, and it is also what the configs' flags give (`--xla_tpu_enable_async_collective_fusion*` "
        "overlaps collectives with independent work; nothing in them enables windowed einsums). So the XLA "
        "default is reported as the prediction, with that order of events stated. Nothing was fitted to "
        "these records.",
        "",
        "The `remat_policy=full` 512B run is the outlier (-20%): full remat runs the layer forward twice, "
        "4/3 of the model's matmul work, so the measured 64% MFU means at least 85% of peak on the matmuls "
        "executed - the v5p config's whole matrix-unit efficiency estimate (0.85), leaving nothing for "
        "exposed communication, attention or anything else. Either that run used a lighter remat than the "
        "script at the commit named, or v5p's matrix units run above 0.85 of peak (then the agreement of the "
        "minimal runs would partly be compensating errors). Settling it needs a v5p GEMM measurement.",
        "",
        "Not modelled: norms, SiLU, residual adds, the embedding lookup, the loss and the optimizer "
        "update; the README's 1024B rows (data parallelism inside the slice). Which commit of each config script produced the README's numbers is not stated; the "
        "values used are those of the commits named in the records. Nor is the FLOP count's version: this "
        "script uses the PaLM appendix-B count (6 x parameters x tokens + causal attention) that MaxText "
        "used early on; its later per-matmul count with non-causal attention is 1-2% higher at these "
        "shapes, which would move every prediction up by that much.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one record id")
    parser.add_argument("--system", default="tpu-v5p-4x4x8", help="v5p torus config (its shape is set per record)")
    parser.add_argument("--out", default=str(HERE.parents[1] / "validation" / "reports" / "maxtext-v5p"),
                        help="where report.md goes (not written with --only)")
    parser.add_argument("--write-trace", nargs=3, metavar=("RECORD", "default|collective-matmul", "FILE"),
                        help="write one record's step trace (TP collectives treated as named) and stop")
    args = parser.parse_args(argv)
    if args.write_trace:
        wanted, treatment, path = args.write_trace
        record = next((r for r in load_records() if r["id"] == wanted), None)
        if record is None or treatment not in ("default", "collective-matmul"):
            parser.error(f"unknown record {wanted!r} or treatment {treatment!r}")
        from accelsim.model.step import step_trace
        from accelsim.system.trace import save_system_trace

        trace = step_trace(model_step(record, tp_overlap=treatment == "collective-matmul"))
        save_system_trace(trace, path)
        print(f"wrote {path}: {len(trace.programs[0].ops)} ops on {trace.num_devices} chips")
        return 0
    rows, started = [], time.perf_counter()
    for record in load_records():
        if args.only and record["id"] != args.only:
            continue
        overlapped = predict(record, True, args.system)
        serial = predict(record, False, args.system)
        measured = record["tflops_per_chip"]
        rows.append((record, overlapped, serial))
        print(f"{record['id']:24} measured {measured:5.0f}  XLA default {serial['tflops_per_chip']:5.0f} "
              f"({serial['tflops_per_chip'] / measured - 1:+.1%})  collective matmul {overlapped['tflops_per_chip']:5.0f} "
              f"({overlapped['tflops_per_chip'] / measured - 1:+.1%})  step {serial['step_time_s']:.2f} s, "
              f"{serial['ops']} device-ops, {overlapped['wall_s'] + serial['wall_s']:.1f} s", flush=True)
    if not args.only:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(report(rows, time.perf_counter() - started), encoding="utf-8")
        print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
