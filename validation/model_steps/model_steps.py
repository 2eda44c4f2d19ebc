#!/usr/bin/env python3
"""Model steps against published step throughputs and decode latencies.

    python validation/model_steps/model_steps.py [--suite SUITE | --only ID] [--out validation/reports/model-steps]

Each record of ``records.json`` (beside this script, every suite with its source, what
it gives and what is assumed) is rebuilt as an ``accelsim model`` step (docs/model.md) on
a system of the published size and replayed. Training records compare throughput per GPU
in the publication's own FLOP count (its count / the predicted step time, against its
count / its measured step time); decode records compare tokens per second of one stream
(one over the inter-token latency; a request's latency is its prefill and each later
token's decode step). Nothing is fitted to these records: chips and networks are the
configs as they are. Error = predicted / published - 1.

Predictions go to ``predictions.json`` beside the report, by record id; ``--suite`` and
``--only`` replace those records' predictions and write the report again from all of them,
``--report-only`` writes it from them alone (a suite's replays can take many minutes: the
Megatron A100, H100 and Llama 3 steps span 32 to 16,384 GPUs), so regenerate everything
with no option after a change to the model; a record without a prediction is listed as
not replayed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

# One BLAS thread, set before numpy loads OpenBLAS: the replay's fluid pool multiplies a
# vector by a flows x links matrix at every event, and on a shared 2-core machine
# OpenBLAS's threads make that gemv about 30x slower (a 512 x 1056 one: 27 ms, 0.8 ms on
# one thread), so the Megatron A100 39B step took over 7 minutes instead of 2.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.model.layout import FRAMEWORKS, Layout, Workload  # noqa: E402
from accelsim.model.presets import PRESETS  # noqa: E402
from accelsim.model.spec import ModelSpec  # noqa: E402
from accelsim.model.step import plan_step, run_step, step_trace  # noqa: E402

A100_VOCAB, A100_SEQ = 51200, 2048
H100_VOCAB, H100_SEQ = 131072, 4096


def gpt(record: dict, vocab: int, tied: bool) -> ModelSpec:
    m = record["model"]
    return ModelSpec(name=record["id"], layers=m["layers"], hidden=m["hidden"], heads=m["heads"], kv_heads=m["heads"],
                     head_dim=m["hidden"] // m["heads"], ffn=4 * m["hidden"], vocab=vocab, mlp="plain",
                     norm="layernorm", tied_embeddings=tied, linear_bias=True, source=record["id"])


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
    """(step, the publication's FLOPs of the step or None) for a training record."""
    suite, gpus = record["suite"], record["gpus"]
    tp, pp = record["tp"], record.get("pp", 1)
    if suite == "megatron-a100":
        model = gpt(record, A100_VOCAB, tied=True)
        workload = Workload(mode="train", seq_len=A100_SEQ, batch=record["batch"])
        layout = Layout(tp=tp, pp=pp, dp=gpus // (tp * pp), zero=0, sequence_parallel=False, recompute="full")
        framework = replace(FRAMEWORKS["megatron"], overlap_grad_reduce=False, overlap_param_gather=False,
                            grad_bytes=2, attention_impl="unfused", wgrad_into_main_grad=False, grad_nan_check=False)
        system = cluster(gpus, "a100-roce-cluster", "network.fabric=infiniband")
        flops = megatron_2021_flops(model, record["batch"], A100_SEQ)
    elif suite == "megatron-h100":
        model = gpt(record, H100_VOCAB, tied=False)
        workload = Workload(mode="train", seq_len=H100_SEQ, batch=record["batch"])
        layout = Layout(tp=tp, pp=pp, dp=gpus // (tp * pp), zero=1)
        framework = replace(FRAMEWORKS["megatron"], tp_overlap=True, attention_impl="cudnn")
        system = cluster(gpus, "h100-ib-cluster")
        flops = megatron_2024_flops(model, record["batch"], H100_SEQ)
    else:
        model = PRESETS.get(record["preset"])
        workload = Workload(mode="train", seq_len=record["seq"], batch=record["batch"])
        layout = Layout(tp=tp, pp=pp, cp=record["cp"], dp=record["dp"], zero=2, virtual_stages=2)
        framework = replace(FRAMEWORKS["megatron"], attention_impl="cudnn", hidden_dropout=False,
                            attention_dropout=False)
        system = cluster(gpus, "h100-ib-cluster")
        flops = None
    return plan_step(model, workload, layout, framework, system, check_memory=False), flops


def inference_step(record: dict, mode: str, seq_len: int):
    """A decode step (a KV cache of ``seq_len`` tokens) or a prefill of ``seq_len``-token
    prompts, on the record's GPUs of its system, tensor parallel, one batch at once."""
    workload = Workload(mode=mode, seq_len=seq_len, batch=record["batch"], dtype=record["dtype"])
    layout = Layout(tp=record["tp"], micro_batch=record["batch"])
    return plan_step(PRESETS.get(record["preset"]), workload, layout, FRAMEWORKS[record["framework"]],
                     load_arch(record["system"]), check_memory=False)


def replayed(step) -> tuple[object, int]:
    result, _ = run_step(step, step_trace(step))
    return result, result.step.ops


def breakdown(result) -> dict:
    return {"step_time_s": result.step_time_s, "compute_s": result.step.compute_s,
            "exposed_comm_s": result.step.exposed_comm_s, "bubble_s": result.bubble_s, "idle_s": result.idle_s,
            "memory_gb": result.memory["total_bytes"] / 1e9, "capacity_gb": result.memory["capacity_bytes"] / 1e9}


def predict_training(record: dict) -> dict:
    step, flops = plan(record)
    result, ops = replayed(step)
    count = flops if flops is not None else result.model_flops
    return {**breakdown(result), "ops": ops, "predicted": count / result.step_time_s / record["gpus"] / 1e12,
            "measured": record["published"]["tflops_per_gpu"]}


def published_tokens_per_s(published: dict) -> float:
    """One stream's tokens per second as the source gives it: directly, as an inter-token
    latency, or as a request's latency over its output tokens."""
    if "tokens_per_s_per_user" in published:
        return published["tokens_per_s_per_user"]
    if "itl_ms" in published:
        return 1e3 / published["itl_ms"]
    return published["output_tokens"] / (published["request_latency_ms"] / 1e3)


def predict_decode(record: dict) -> dict:
    """Decode at the mean cache length the source's run sees (its prompt plus half its
    output); a request adds its prefill, which gives the first output token."""
    published = record["published"]
    result, ops = replayed(inference_step(record, "decode", record["context"]))
    out = {**breakdown(result), "ops": ops, "measured": published_tokens_per_s(published)}
    if "request_latency_ms" in published:
        prefill, prefill_ops = replayed(inference_step(record, "prefill", published["input_tokens"]))
        latency_s = prefill.step_time_s + (published["output_tokens"] - 1) * result.step_time_s
        out |= {"predicted": published["output_tokens"] / latency_s, "prefill_s": prefill.step_time_s,
                "ops": ops + prefill_ops}
    else:
        out["predicted"] = 1 / result.step_time_s
    return out


def predict(record: dict) -> tuple[dict, float, float]:
    """The record's prediction, and the wall and CPU seconds it took (build and replay)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = predict_decode(record) if record["kind"] == "decode" else predict_training(record)
    out["error"] = out["predicted"] / out["measured"] - 1
    return out, time.perf_counter() - wall, time.process_time() - cpu


SUITE_TITLES = {"megatron-a100": "Megatron-LM GPT on A100 (Narayanan et al. 2021, Table 1)",
                "megatron-h100": "Megatron-LM GPT on H100 (Megatron-LM README, 2024)",
                "llama3": "Llama 3 405B training (Llama 3 paper, Table 4)",
                "decode": "70B decode, one stream (TensorRT-LLM, NVIDIA blog)",
                "decode-nim": "Llama 3.3 70B decode on 2 H100, one stream (NVIDIA NIM benchmarks)",
                "decode-vllm": "Llama 3 70B requests on 4 H200 (vLLM's nightly latency benchmark)"}


def _layout_text(r: dict) -> str:
    return f"TP{r['tp']} PP{r.get('pp', 1)}" + (f" CP{r['cp']}" if r.get("cp", 1) > 1 else "")


def suite_table(info: dict, suite: str, rows: list[tuple[dict, dict]]) -> list[str]:
    decode = suite.startswith("decode")
    unit = "tokens/s" if decode else "TFLOP/s/GPU"
    lines = [f"Source: {info['source']}.", "", f"Given: {info['given']}. Assumed: {info['assumed']}.", "",
             f"| run | GPUs | layout | published {unit} | predicted | error | step s | compute s | exposed comm s | "
             "bubble s | idle s | memory GB (HBM) |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r, p in rows:
        lines.append(f"| {r['id']} | {r['gpus']} | {_layout_text(r)} | {p['measured']:.4g} | {p['predicted']:.4g} | "
                     f"{p['error']:+.1%} | {p['step_time_s']:.4g} | {p['compute_s']:.4g} | "
                     f"{p['exposed_comm_s']:.3g} | {p['bubble_s']:.3g} | {p['idle_s']:.3g} | "
                     f"{p['memory_gb']:.0f} ({p['capacity_gb']:.0f}) |")
    errors = [abs(p["error"]) for _, p in rows]
    return lines + ["", f"MAPE {sum(errors) / len(errors):.1%} over {len(errors)} runs (max {max(errors):.1%}).", ""]


def report(data: dict, predictions: dict) -> str:
    lines = ["# Model steps: predicted vs published", "",
             "Generated by `python validation/model_steps/model_steps.py`. Records: "
             "`validation/model_steps/records.json` (each suite's source, what it gives and what is assumed). "
             "Training: TFLOP/s per GPU in the publication's own FLOP count; decode: tokens/s of one stream. "
             "Nothing fitted. Error = predicted / published - 1. The breakdown is one device's step (its "
             "busiest pipeline stage's memory): compute, communication not hidden behind compute, the pipeline "
             "bubble (the schedule's fill and drain) and other idle time (docs/model.md).", "",
             "| suite | runs | MAPE | max |", "| --- | ---: | ---: | ---: |"]
    sections = []
    for suite, title in SUITE_TITLES.items():
        rows = [(r, predictions[r["id"]]) for r in data["records"] if r["suite"] == suite and r["id"] in predictions]
        missing = [r["id"] for r in data["records"] if r["suite"] == suite and r["id"] not in predictions]
        if not rows:
            if missing:
                lines.append(f"| {title} | 0 | | |")
                sections += [f"## {title}", "", f"Not replayed for this report: {', '.join(missing)}.", ""]
            continue
        errors = [abs(p["error"]) for _, p in rows]
        lines.append(f"| {title} | {len(rows)} | {sum(errors) / len(errors):.1%} | {max(errors):.1%} |")
        sections += [f"## {title}", "", *suite_table(data["suites"][suite], suite, rows)]
        if missing:
            sections += [f"Not replayed for this report: {', '.join(missing)}.", ""]
    return "\n".join([*lines, "", *sections])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one record id")
    parser.add_argument("--suite", choices=tuple(SUITE_TITLES), help="one suite")
    parser.add_argument("--out", default=str(HERE.parents[1] / "validation" / "reports" / "model-steps"))
    parser.add_argument("--report-only", action="store_true", help="write the report from predictions.json alone")
    args = parser.parse_args(argv)
    data = json.loads((HERE / "records.json").read_text(encoding="utf-8"))
    out = Path(args.out)
    cache = out / "predictions.json"
    partial = bool(args.only or args.suite or args.report_only)
    predictions = json.loads(cache.read_text(encoding="utf-8")) if partial and cache.is_file() else {}
    for record in data["records"]:
        skipped = (args.only and record["id"] != args.only) or (args.suite and record["suite"] != args.suite)
        if skipped or args.report_only:
            continue
        p, wall_s, cpu_s = predict(record)
        predictions[record["id"]] = p
        print(f"{record['id']:40} published {p['measured']:8.4g}  predicted {p['predicted']:8.4g} ({p['error']:+.1%})"
              f"  step {p['step_time_s']:.4g} s, {p['ops']} device-ops, {wall_s:.1f} s ({cpu_s:.1f} s of CPU)",
              flush=True)
    known = {r["id"] for r in data["records"]}
    predictions = {k: predictions[k] for k in sorted(predictions) if k in known}
    out.mkdir(parents=True, exist_ok=True)
    (out / "predictions.json").write_text(json.dumps(predictions, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (out / "report.md").write_text(report(data, predictions), encoding="utf-8")
    print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
