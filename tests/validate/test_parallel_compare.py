"""Predicting records in worker processes (``validate --jobs``) gives the same comparisons,
in the same order, and bad input from a worker arrives whole (file, field, message)."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from accelsim.errors import InputError
from accelsim.validate.compare import Refused, compare, read_measurements

REFERENCE = Path(__file__).resolve().parents[2] / "validation" / "reference" / "a100-sxm4-80gb"


def test_two_workers_predict_what_one_does():
    records = [m for m in read_measurements([REFERENCE]) if m.family in ("layernorm", "gemm")][:6]
    alone = compare(records)
    shared = compare(records, jobs=2)
    assert [c.measurement.id for c in shared] == [c.measurement.id for c in alone]
    assert [(c.predicted_s, c.config) for c in shared] == [(c.predicted_s, c.config) for c in alone]


def test_a_refused_config_from_a_worker_is_reported_like_one_from_here():
    norms = [m for m in read_measurements([REFERENCE]) if m.family == "layernorm"][:2]
    bad = replace(norms[0], id="bad", config={"block_rows": 0, "num_warps": 4})
    for jobs in (1, 2):
        refused: list[Refused] = []
        assert len(compare([*norms, bad], refused=refused, jobs=jobs)) == 2
        assert [r.measurement.id for r in refused] == ["bad"]
        assert "block_rows" in refused[0].reason
    with pytest.raises(InputError, match="block_rows"):
        compare([*norms, bad], jobs=2)


def test_input_error_survives_pickling():
    error = InputError("expected a positive integer", source="f.json", line=3, field=("records", 0, "params"))
    again = pickle.loads(pickle.dumps(error))
    assert again.one_line() == error.one_line() == "f.json:3: records[0].params: expected a positive integer"
    with pytest.raises(InputError):
        raise again
