#!/usr/bin/env python3
"""Model steps against published step throughputs and decode latencies.

    python validation/model_steps/model_steps.py [--only ID] [--out validation/reports/model-steps]

Each record of ``records.json`` (beside this script, every suite with its source, what
it gives and what is assumed) is rebuilt as an ``accelsim model`` step (docs/model.md) on
a system of the published size and replayed. Training records compare throughput per GPU
in the publication's own FLOP count (its count / the predicted step time, against its
count / its measured step time); the decode record compares tokens per second of one
stream. Nothing is fitted to these records: chips and networks are the configs as they
are. Error = predicted / published - 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.model.layout import FRAMEWORKS, Layout, Workload  # noqa: E402
from accelsim.model.presets import PRESETS  # noqa: E402
from accelsim.model.spec import ModelSpec  # noqa: E402
from accelsim.model.step import plan_step, run_step, step_trace  # noqa: E402

A100_VOCAB, A100_SEQ = 51200, 2048
H100_VOCAB, H100_SEQ = 131072, 4096
DECODE_CONTEXT = 1024


def gpt(record: dict, vocab: int) -> ModelSpec:
    m = record["model"]
    return ModelSpec(name=record["id"], layers=m["layers"], hidden=m["hidden"], heads=m["heads"], kv_heads=m["heads"],
                     head_dim=m["hidden"] // m["heads"], ffn=4 * m["hidden"], vocab=vocab, mlp="plain",
                     norm="layernorm", tied_embeddings=True, source=record["id"])


def megatron_2021_flops(model: ModelSpec, batch: int, seq: int) -> float:
    """Narayanan et al. 2021, eq. (3): recompute included, attention over every key."""
    b, s, l, h, v = batch, seq, model.layers, model.hidden, model.vocab
    return 96 * b * s * l * h**2 * (1 + s / (6 * h) + v / (16 * l * h))


def megatron_2024_flops(model: ModelSpec, batch: int, seq: int) -> float:
    """Megatron-LM's ``num_floating_point_operations`` for a GPT of 4h MLP (no recompute)."""
    b, s, l, h, v = batch, seq, model.layers, model.hidden, model.vocab
    return 72 * b * s * l * h**2 * (1 + s / (6 * h) + v / (12 * l * h))


def cluster(gpus: int, base: str, *extra: str):
    return load_arch(base, [f"nodes={gpus // 8}", *extra])


def plan(record: dict):
    """(step, the publication's FLOPs of the step or None) for a record."""
    suite, gpus = record["suite"], record["gpus"]
    tp, pp = record["tp"], record.get("pp", 1)
    if suite == "megatron-a100":
        model = gpt(record, A100_VOCAB)
        workload = Workload(mode="train", seq_len=A100_SEQ, batch=record["batch"])
        layout = Layout(tp=tp, pp=pp, dp=gpus // (tp * pp), zero=0, sequence_parallel=False, recompute="full")
        framework = replace(FRAMEWORKS["megatron"], overlap_grad_reduce=False, overlap_param_gather=False,
                            grad_bytes=2, attention_impl="unfused")
        system = cluster(gpus, "a100-roce-cluster", "network.fabric=infiniband")
        flops = megatron_2021_flops(model, record["batch"], A100_SEQ)
    elif suite == "megatron-h100":
        model = gpt(record, H100_VOCAB)
        workload = Workload(mode="train", seq_len=H100_SEQ, batch=record["batch"])
        layout = Layout(tp=tp, pp=pp, dp=gpus // (tp * pp), zero=1)
        framework = replace(FRAMEWORKS["megatron"], tp_overlap=True, attention_impl="cudnn")
        system = cluster(gpus, "h100-ib-cluster")
        flops = megatron_2024_flops(model, record["batch"], H100_SEQ)
    elif suite == "llama3":
        model = PRESETS.get(record["preset"])
        workload = Workload(mode="train", seq_len=record["seq"], batch=record["batch"])
        layout = Layout(tp=tp, pp=pp, cp=record["cp"], dp=record["dp"], zero=1, virtual_stages=2)
        framework = replace(FRAMEWORKS["megatron"], attention_impl="cudnn")
        system = cluster(gpus, "h100-ib-cluster")
        flops = None
    else:
        model = PRESETS.get(record["preset"])
        workload = Workload(mode="decode", seq_len=DECODE_CONTEXT, batch=record["batch"], dtype=record["dtype"])
        layout = Layout(tp=tp, micro_batch=record["batch"])
        framework = FRAMEWORKS["megatron"]
        system = load_arch("dgx-h200")
        flops = None
    return plan_step(model, workload, layout, framework, system, check_memory=False), flops


def predict(record: dict) -> dict:
    started = time.perf_counter()
    step, flops = plan(record)
    result, _ = run_step(step, step_trace(step))
    out = {"step_time_s": result.step_time_s, "mfu": result.mfu, "memory_gb": result.memory["total_bytes"] / 1e9,
           "capacity_gb": result.memory["capacity_bytes"] / 1e9, "compute_s": result.step.compute_s,
           "exposed_comm_s": result.step.exposed_comm_s, "bubble_s": result.bubble_s, "idle_s": result.idle_s,
           "wall_s": time.perf_counter() - started, "ops": result.step.ops}
    if record["kind"] == "decode":
        out["predicted"] = record["batch"] / result.step_time_s / record["batch"]
        out["measured"] = record["published"]["tokens_per_s_per_user"]
    else:
        count = flops if flops is not None else result.model_flops
        out["predicted"] = count / result.step_time_s / record["gpus"] / 1e12
        out["measured"] = record["published"]["tflops_per_gpu"]
    out["error"] = out["predicted"] / out["measured"] - 1
    return out


SUITE_TITLES = {"megatron-a100": "Megatron-LM GPT on A100 (Narayanan et al. 2021, Table 1)",
                "megatron-h100": "Megatron-LM GPT on H100 (Megatron-LM README, 2024)",
                "llama3": "Llama 3 405B training (Llama 3 paper, Table 4)",
                "decode": "70B decode, one stream (TensorRT-LLM, NVIDIA blog)"}


def report(data: dict, rows: list[tuple[dict, dict]], wall_s: float) -> str:
    lines = ["# Model steps: predicted vs published", "",
             f"Generated by `python validation/model_steps/model_steps.py` ({wall_s:.0f} s on this 2-core machine). "
             "Records: `validation/model_steps/records.json` (each suite's source, what it gives and what is "
             "assumed). Training: TFLOP/s per GPU in the publication's own FLOP count; decode: tokens/s of one "
             "stream. Nothing fitted. Error = predicted / published - 1.", ""]
    for suite, title in SUITE_TITLES.items():
        mine = [(r, p) for r, p in rows if r["suite"] == suite]
        if not mine:
            continue
        info = data["suites"][suite]
        unit = "tokens/s" if suite == "decode" else "TFLOP/s/GPU"
        lines += [f"## {title}", "", f"Source: {info['source']}.", "", f"Given: {info['given']}. Assumed: "
                  f"{info['assumed']}.", "",
                  f"| run | GPUs | layout | published {unit} | predicted | error | step s | exposed comm s | "
                  "bubble s | memory GB (HBM) |",
                  "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r, p in mine:
            layout = f"TP{r['tp']} PP{r.get('pp', 1)}" + (f" CP{r['cp']}" if r.get("cp", 1) > 1 else "")
            lines.append(f"| {r['id']} | {r['gpus']} | {layout} | {p['measured']:.4g} | {p['predicted']:.4g} | "
                         f"{p['error']:+.1%} | {p['step_time_s']:.4g} | {p['exposed_comm_s']:.3g} | "
                         f"{p['bubble_s']:.3g} | {p['memory_gb']:.0f} ({p['capacity_gb']:.0f}) |")
        errors = [abs(p["error"]) for _, p in mine]
        lines += ["", f"MAPE {sum(errors) / len(errors):.1%} over {len(errors)} runs (max {max(errors):.1%}).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one record id (nothing written)")
    parser.add_argument("--suite", help="one suite (nothing written)")
    parser.add_argument("--out", default=str(HERE.parents[1] / "validation" / "reports" / "model-steps"))
    args = parser.parse_args(argv)
    data = json.loads((HERE / "records.json").read_text(encoding="utf-8"))
    rows, started = [], time.perf_counter()
    for record in data["records"]:
        if (args.only and record["id"] != args.only) or (args.suite and record["suite"] != args.suite):
            continue
        p = predict(record)
        rows.append((record, p))
        print(f"{record['id']:32} published {p['measured']:8.4g}  predicted {p['predicted']:8.4g} ({p['error']:+.1%})"
              f"  step {p['step_time_s']:.4g} s, {p['ops']} device-ops, {p['wall_s']:.1f} s", flush=True)
    if not (args.only or args.suite):
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(report(data, rows, time.perf_counter() - started), encoding="utf-8")
        print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
