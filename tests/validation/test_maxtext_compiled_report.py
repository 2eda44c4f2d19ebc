"""validation/maxtext/report_compiled.py: how a compiled schedule issues each collective,
and where a step's matrix flops go (XLA's remat clones, splash attention, the rest)."""

from __future__ import annotations

import sys

import pytest

from tests import conftest
from tests.system.conftest import compute, spmd

sys.path.insert(0, str(conftest.REPO / "validation" / "maxtext"))

import maxtext_v5p as mx  # noqa: E402
import report_compiled as rc  # noqa: E402

MiB = 1 << 20


def gather(name: str, **extra) -> dict:
    return {"name": name, "kind": "all-gather", "bytes": MiB, **extra}


SCHEDULE = [gather("blocking"),
            gather("adjacent", **{"async": True}), {"name": "adjacent.done", "kind": "done", "start": "adjacent"},
            gather("overlapped", **{"async": True}), compute("work", 1e-5),
            {"name": "overlapped.done", "kind": "done", "start": "overlapped"},
            gather("used", **{"async": True}), compute("user", 1e-5, deps=["used"]),
            gather("last", **{"async": True})]


@pytest.mark.parametrize(("name", "form"), [("blocking", "synchronous"), ("adjacent", "async, nothing between"),
                                            ("overlapped", "async, work between"),
                                            ("used", "async, nothing between"), ("last", "async, work between")])
def test_the_schedule_form_of_each_collective(name, form):
    ops = spmd(SCHEDULE).programs[0].ops
    assert rc.schedule_form(ops, next(i for i, op in enumerate(ops) if op.name == name)) == form


def test_matrix_flops_split_into_xla_remat_clones_splash_attention_and_the_rest():
    trace = spmd([{"name": "while.9.x4/fusion.641", "kind": "compute", "flops": 1e12},
                  {"name": "while.9.x4/fusion.641.remat3", "kind": "compute", "flops": 1e12},
                  {"name": "while.9.x4/splash_mha_dq_segmented_no_residuals.1", "kind": "compute", "flops": 3e11},
                  {"name": "add.1", "kind": "compute", "flops": 5e11, "unit": "vector"}])
    assert rc.matrix_terms(trace) == {"all": 2.3e12, "xla_remat": 1e12, "splash": 3e11}


def test_maxtext_s_count_is_its_two_terms():
    m = mx.model(64)
    learnable, attention = mx.model_tflops_terms(m, 3)
    assert learnable + attention == pytest.approx(mx.model_tflops_per_chip(m, 3))
    assert learnable == pytest.approx(6 * m.params * 3 * mx.SEQ / 1e12)


def test_a_program_compiled_at_another_batch_is_a_variant_counted_at_its_batch():
    """``compile_maxtext.py --batch 2`` writes ``ID-batch2``: the report replays it as a
    variant whose MaxText count is at batch 2, labelled a diagnostic."""
    record = next(r for r in mx.load_records() if r["id"] == "maxtext-64b-v5p-128")
    variants = {step["id"]: step for step, path in rc.compiled_steps(record) if path.exists()}
    lower = variants["maxtext-64b-v5p-128-batch2"]
    assert lower["per_device_batch_size"] == 2 and record["per_device_batch_size"] == 3
    assert "batch 2 (a diagnostic" in rc._label(lower)
    untracked = variants["maxtext-64b-v5p-128-no-memory-tracking"]
    assert untracked["per_device_batch_size"] == 3 and "not tracking memory pressure" in rc._label(untracked)


def test_a_program_compiled_at_another_tensor_parallelism_is_a_variant_labelled_so(tmp_path, monkeypatch):
    """``compile_maxtext.py --tp 16`` writes ``ID-tp16``: replayed as a variant at that
    tensor parallelism (MaxText's count does not depend on it)."""
    record = next(r for r in mx.load_records() if r["id"] == "maxtext-512b-v5p-1024")
    monkeypatch.setattr(rc, "COMPILED", tmp_path)
    (tmp_path / "maxtext-512b-v5p-1024-tp16.hlo.txt.gz").write_bytes(b"")
    variants = {step["id"]: step for step, _ in rc.compiled_steps(record)}
    wider = variants["maxtext-512b-v5p-1024-tp16"]
    assert wider["ici_tensor_parallelism"] == 16 and record["ici_tensor_parallelism"] == 8
    assert rc._label(wider).endswith("tensor parallelism 16 over a split physical axis (a diagnostic: "
                                     "`compile_maxtext.py --tp`)")
