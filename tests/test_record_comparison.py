"""``RecordComparison``: a measured record beside its prediction, in the results schema
(the rows of ``accelsim validate``'s ``records.json``)."""

from __future__ import annotations

import json

import pytest

from accelsim.results import RecordComparison, relative_error
from tests.conftest import REPO

RECORD = RecordComparison(measured_on="h100-sxm", id="gemm-1", family="gemm", implementation="cublas",
                          source="a paper", status="never fitted", measured_s=2e-3, predicted_s=1.5e-3)


def test_the_error_is_signed_and_relative_to_the_measurement():
    assert RECORD.error == pytest.approx(-0.25)  # predicted faster than measured: negative
    assert relative_error(3.0, 2.0) == pytest.approx(0.5)


def test_its_json_is_the_row_validation_tables_read():
    row = RECORD.to_json()
    assert list(row) == ["measured_on", "id", "family", "implementation", "source", "status", "measured_s",
                         "predicted_s", "error"]
    assert json.loads(json.dumps(row))["error"] == RECORD.error


def test_every_committed_validation_row_is_a_record_comparison():
    reports = sorted((REPO / "validation" / "reports").glob("*/records.json"))
    assert reports
    for path in reports:
        for row in json.loads(path.read_text(encoding="utf-8"))["records"]:
            fields = {k: v for k, v in row.items() if k != "error"}
            assert RecordComparison(**fields).to_json() == row, (path, row["id"])
