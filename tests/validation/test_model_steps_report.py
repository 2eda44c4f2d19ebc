"""validation/model_steps/model_steps.py: each source's figure read as one stream's tokens
per second, every record buildable (its system and framework exist), and the report:
MAPE per suite from the predictions, the records without one named, no wall time in it
(it regenerates byte for byte)."""

from __future__ import annotations

import json
import sys

import pytest

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation" / "model_steps"))

import model_steps as ms  # noqa: E402

from accelsim.arch.model import load_arch  # noqa: E402
from accelsim.model.layout import FRAMEWORKS  # noqa: E402
from accelsim.model.presets import PRESETS  # noqa: E402

DATA = json.loads((conftest.REPO / "validation" / "model_steps" / "records.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("published", "tokens_per_s"), [
    ({"tokens_per_s_per_user": 51.14}, 51.14),
    ({"itl_ms": 20.0}, 50.0),
    ({"request_latency_ms": 2000.0, "input_tokens": 32, "output_tokens": 128}, 64.0),
])
def test_published_figures_as_one_streams_tokens_per_second(published, tokens_per_s):
    assert ms.published_tokens_per_s(published) == pytest.approx(tokens_per_s)


def test_every_record_names_a_suite_with_its_source_and_what_it_can_be_built_on():
    for record in DATA["records"]:
        info = DATA["suites"][record["suite"]]
        assert info["source"] and info["given"] and info["assumed"] and record["suite"] in ms.SUITE_TITLES
        if record["kind"] == "decode":
            assert record["framework"] in FRAMEWORKS and record["preset"] in PRESETS
            assert load_arch(record["system"]).num_chips >= record["gpus"] == record["tp"]


def test_the_megatron_flop_counts_are_the_publications():
    model = ms.gpt({"id": "gpt", "model": {"layers": 24, "hidden": 2048, "heads": 16}}, ms.H100_VOCAB, tied=False)
    b, s, l, h, v = 1, 4096, 24, 2048, ms.H100_VOCAB
    dense = 24 * b * s * l * h * h * 3  # forward + backward of 12 h^2 per token and layer
    attention = 12 * b * s * s * l * h  # QK^T and PV over every key, three passes
    logits = 6 * b * s * h * v
    assert ms.megatron_2024_flops(model, b, s) == pytest.approx(dense + attention + logits)
    assert ms.megatron_2021_flops(model, b, s) == pytest.approx(4 / 3 * (dense + attention) + logits)  # recompute


def test_the_h100_table_sizes_are_untied_models():
    """The README's model sizes (in the ids) are the untied parameter counts, within the
    rounding of a label; the tied counts miss the small ones by more."""
    for record in (r for r in DATA["records"] if r["suite"] == "megatron-h100"):
        label = float(record["id"].removeprefix("megatron-h100-").removesuffix("b")) * 1e9
        assert ms.gpt(record, ms.H100_VOCAB, tied=False).params == pytest.approx(label, rel=0.03)
    small = next(r for r in DATA["records"] if r["id"] == "megatron-h100-1.7b")
    assert ms.gpt(small, ms.H100_VOCAB, tied=True).params < 0.9 * 1.7e9


def test_the_report_gives_each_suites_mape_and_no_wall_time():
    rows = [r for r in DATA["records"] if r["suite"] in ("decode-nim", "megatron-a100")][:3]
    step = {"step_time_s": 0.02, "compute_s": 0.018, "exposed_comm_s": 0.002, "bubble_s": 0.0, "idle_s": 0.0,
            "memory_gb": 40.0, "capacity_gb": 80.0}
    predictions = {r["id"]: {**step, "measured": 100.0, "predicted": 100.0 + 10 * i, "error": 0.1 * i}
                   for i, r in enumerate(rows)}
    text = ms.report(DATA, predictions)
    assert text == ms.report(DATA, dict(reversed(list(predictions.items()))))
    a100 = [r for r in rows if r["suite"] == "megatron-a100"]
    mape = sum(abs(predictions[r["id"]]["error"]) for r in a100) / len(a100)
    assert f"| {ms.SUITE_TITLES['megatron-a100']} | {len(a100)} | {mape:.1%} |" in text
    assert "machine" not in text and " s on " not in text
    unreplayed = [r["id"] for r in DATA["records"] if r["suite"] == "megatron-a100" and r["id"] not in predictions]
    assert f"Not replayed for this report: {', '.join(unreplayed)}." in text
    llama3 = [r["id"] for r in DATA["records"] if r["suite"] == "llama3"]
    assert f"| {ms.SUITE_TITLES['llama3']} | 0 | | |" in text and ", ".join(llama3) in text
