"""Reference records timed one call at a time on an idle GPU (cudnn-frontend's profiler-per-call
loops) say so in their ``conditions`` (``power.dvfs.boost.from_idle``) where their chip models the
power limiter (the boost section: Hopper); others, and chips without the section, do not."""

from __future__ import annotations

import json
from pathlib import Path

import build_reference

REFERENCE = Path(build_reference.__file__).parent
FROM_IDLE = "power.dvfs.boost.from_idle"


def _records(arch: str) -> list[dict]:
    return json.loads((REFERENCE / arch / "attention.json").read_text())["records"]


def test_every_h200_cudnn_frontend_record_is_timed_from_idle():
    records = [r for r in _records("h200-sxm") if "NVIDIA/cudnn-frontend" in r["source"]]
    assert len(records) >= 160
    assert all(r["conditions"][FROM_IDLE] == "true" for r in records)
    assert all("torch profiler window" in r["notes"] for r in records)


def test_other_h200_records_keep_the_back_to_back_default():
    others = [r for r in _records("h200-sxm") if "NVIDIA/cudnn-frontend" not in r["source"]]
    assert others and not any(FROM_IDLE in r.get("conditions", {}) for r in others)


def test_chips_without_a_modelled_limiter_get_no_such_condition():
    for arch in ("b200", "gb200"):
        assert not any(FROM_IDLE in r.get("conditions", {}) for r in _records(arch))


def test_the_converter_sets_it_from_the_hardware_name():
    row = {"category": "attention", "hardware": "NVIDIA H200 (cudnn-frontend attention_inference)",
           "workload": "cuDNN SDPA prefill (cudnn-frontend attention_inference, backend cudnn)",
           "parameters": {"model": "llama3.1", "batch": 1, "heads": 64, "kv_heads": 8, "seq_q": 256,
                          "seq_kv": 8192, "head_dim": 128, "causal": True, "dtype": "bf16"},
           "metric": "latency", "value": 0.12, "unit": "ms", "source": "test row", "notes": "test row.",
           "measured": True}
    converted = build_reference.convert_cudnn_frontend_prefill(row)
    assert converted.record["conditions"] == {FROM_IDLE: "true"}
