"""cudnn-frontend's training SDPA benchmark: its flop count, and how its rounded time and
TFLOP/s become a reference record's ``latency_s``."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

import build_reference

REFERENCE = Path(build_reference.__file__).parent
ROW = {  # GB200, Llama 3.1, bf16, top_left, 2 x 2048 tokens, forward: 0.125 ms, 1097 TFLOP/s
    "category": "attention",
    "hardware": "NVIDIA GB200 (cudnn-frontend sdpa_benchmark_training)",
    "workload": "cuDNN SDPA forward (cudnn-frontend sdpa_benchmark_training, backend cudnn)",
    "parameters": {"model": "llama3.1", "batch": 2, "heads": 64, "kv_heads": 8, "seq_q": 2048, "seq_kv": 2048,
                   "head_dim": 128, "causal": True, "dtype": "bf16", "pass": "fwd", "time_ms": 0.125},
    "metric": "throughput", "value": 1097.0, "unit": "TFLOP/s",
    "source": "test row", "notes": "test row.", "measured": True,
}


@pytest.mark.parametrize("seq_q, seq_kv", [(7, 7), (5, 9), (9, 5)])
@pytest.mark.parametrize("direction, dims", [("fwd", 2), ("bwd", 5)])
def test_flops_count_the_lower_triangle_with_its_diagonal(seq_q, seq_kv, direction, dims):
    """The script's ``torch.tril(ones(q, kv)).sum()`` for a causal mask, then 2 (fwd) or 5 (bwd) BMMs."""
    par = {"batch": 3, "heads": 2, "seq_q": seq_q, "seq_kv": seq_kv, "head_dim": 4, "causal": True, "pass": direction}
    unmasked = int(np.tril(np.ones((seq_q, seq_kv))).sum())
    assert build_reference.cudnn_sdpa_benchmark_flops(par) == 2 * 3 * 2 * unmasked * dims * 4
    assert build_reference.cudnn_sdpa_benchmark_flops({**par, "causal": False}) == 2 * 3 * 2 * seq_q * seq_kv * dims * 4


def test_latency_comes_from_the_less_rounded_figure():
    converted = build_reference.convert_cudnn_frontend_training(ROW)
    flops = build_reference.cudnn_sdpa_benchmark_flops(ROW["parameters"])
    assert converted.arch == "gb200" and converted.record["params"]["impl"] == "cudnn"
    assert converted.record["latency_s"] == pytest.approx(flops / 1097e12, rel=1e-9)  # 0.05% vs the time's 0.4%
    assert converted.record["latency_kind"] == "device"
    assert converted.record["cache_flush"] == build_reference.CUDNN_SDPA_FLUSH
    slow = copy.deepcopy(ROW)
    slow["parameters"].update(seq_q=32768, seq_kv=32768, time_ms=21.692)
    # at 21.692 ms the printed time is rounded less than an integer TFLOP/s
    slow["value"] = round(build_reference.cudnn_sdpa_benchmark_flops(slow["parameters"]) / 21.692e-3 / 1e12)
    assert build_reference.convert_cudnn_frontend_training(slow).record["latency_s"] == pytest.approx(21.692e-3)


def test_a_row_whose_time_and_throughput_disagree_is_left_out():
    bad = copy.deepcopy(ROW)
    bad["parameters"]["time_ms"] = 0.135
    assert isinstance(build_reference.convert_cudnn_frontend_training(bad), build_reference.LeftOut)


def test_every_committed_training_record_agrees_with_both_printed_figures():
    records = [r for path in sorted(REFERENCE.glob("*/attention.json"))
               for r in json.loads(path.read_text())["records"] if r["id"].endswith("--cudnn-sdpa-training")]
    assert len(records) == 105
    for r in records:
        assert r["params"]["impl"] == "cudnn" and r["latency_kind"] == "device"
        time_ms, tflops = _printed(r["notes"])
        flops = build_reference.cudnn_sdpa_benchmark_flops(r["params"])
        from_time, from_tflops = time_ms * 1e-3, flops / (tflops * 1e12)
        # the time printed to 3 decimals of a ms and the TFLOP/s to a whole one bound the same interval
        assert max(from_time - 0.5e-6, flops / ((tflops + 0.5) * 1e12)) <= \
            min(from_time + 0.5e-6, flops / ((tflops - 0.5) * 1e12)) * (1 + 1e-9), r["id"]
        assert r["latency_s"] in (pytest.approx(from_time, rel=1e-9), pytest.approx(from_tflops, rel=1e-9)), r["id"]


def _printed(notes: str) -> tuple[float, float]:
    """The CSV's time (ms) and TFLOP/s, as the converter's note quotes them."""
    derived = re.search(r"latency_s derived from ([0-9.]+) TFLOP/s .*?the printed time, ([0-9.]+) ms", notes)
    if derived:
        return float(derived.group(2)), float(derived.group(1))
    median = re.search(r"latency_s is the source's median time, ([0-9.]+) ms \(its ([0-9.]+) TFLOP/s", notes)
    assert median, notes
    return float(median.group(1)), float(median.group(2))
