"""The headline tables of docs/accuracy.md are what ``validation/accuracy_headline.py`` writes
from the committed reports' ``records.json``: never-fitted records of published configs only,
each measurement once, every number with its record count and sources."""

from __future__ import annotations

import json

import pytest

import accuracy_headline as headline


def test_the_committed_headline_matches_the_committed_reports():
    text = headline.DOC.read_text(encoding="utf-8")
    assert headline.with_headline(text, headline.render(headline.read_reports())) == text, (
        "docs/accuracy.md's headline is out of date: run python validation/accuracy_headline.py")


def _report(folder, config, records, overrides=()):
    folder.mkdir(parents=True)
    (folder / "records.json").write_text(json.dumps({
        "schema_version": 1, "kind": "validation-records", "config": config, "overrides": list(overrides),
        "header": "test", "records": records}))


def _record(rid, status="never fitted", error=0.1, measured_s=1e-3, measured_on="h200-sxm", source="a/b"):
    return {"measured_on": measured_on, "id": rid, "family": "elementwise", "implementation": "gpu-stream",
            "source": source, "status": status, "measured_s": measured_s, "predicted_s": measured_s * (1 + error),
            "error": error}


def test_only_never_fitted_records_of_published_configs_make_the_headline(tmp_path):
    _report(tmp_path / "h200-sxm", "h200-sxm", [_record("a", error=0.1), _record("b", error=-0.3, measured_s=2e-3),
                                                _record("derived", status="derived", error=0.5, measured_s=3e-3)])
    _report(tmp_path / "stream/h200-sxm", "h200-sxm", [_record("a-t1024", error=0.1)])  # the same measurement as "a"
    _report(tmp_path / "h200-sxm-calibrated", "h200-sxm-calibrated", [_record("a", status="fitted", error=0.01)])
    _report(tmp_path / "h200-fit", "h200-sxm", [_record("a", error=0.02)], overrides=["hbm.efficiency=0.8"])
    reports = headline.read_reports(tmp_path)
    assert [r["id"] for r in headline.never_fitted(reports)] == ["a", "b"]
    text = headline.render(reports)
    assert "On **2 records no fit touched**" in text
    assert "| h200-sxm | elementwise | 2 | 20.0% | 20.0% | 50% | -10.0% | a/b |" in text
    fitted = text.split("#### Fitted and held-out")[1]
    assert "| h200-sxm-calibrated | fitted | elementwise | 1 | 1.0% |" in fitted
    assert "| h200-fit | never fitted | elementwise | 1 | 2.0% |" in fitted


def test_all_records_together_and_by_chip_kind(tmp_path):
    _report(tmp_path / "h200-sxm", "h200-sxm", [_record("a", error=0.1), _record("b", error=-0.3, measured_s=2e-3)])
    _report(tmp_path / "tpu-v5e", "tpu-v5e", [_record("c", error=0.6, measured_on="tpu-v5e")])
    text = headline.render(headline.read_reports(tmp_path)).split("#### Never fitted, by chip")[0]
    assert "| all chips | 3 | 33.3% | 30.0% | 33% | +13.3% | 2 chips |" in text
    assert "| GPU chips | 2 | 20.0% | 20.0% | 50% | -10.0% | h200-sxm |" in text
    assert "| TPU chips | 1 | 60.0% | 60.0% | 0% | +60.0% | tpu-v5e |" in text


def test_the_tables_go_between_the_markers_only():
    text = f"intro\n{headline.BEGIN}\nold\n{headline.END}\nrest\n"
    assert headline.with_headline(text, "new") == f"intro\n{headline.BEGIN}\nnew\n{headline.END}\nrest\n"
    with pytest.raises(ValueError, match="expected one"):
        headline.with_headline("no markers", "new")
