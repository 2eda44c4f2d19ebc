"""Calibration recovers parameters from measurements made by a known chip, and the
calibrate / validate commands write what they promise."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml

from accelsim.validate.calibrate import (
    DEFAULT_PARAMETERS,
    Fit,
    errors,
    fit,
    is_held_out,
    prepare,
    with_final_configs,
)
from accelsim.validate.compare import kendall_tau, read_measurements
from tests.synthetic_measurements import write_stream

TRUTH = ["hbm.efficiency=0.7", "launch_overhead=6 us"]
SIZES = [(elements, inputs, outputs) for elements in (2**16, 2**20, 2**22, 2**24) for inputs, outputs in ((1, 1), (2, 1), (0, 1))]
FIT = ("hbm.efficiency", "launch_overhead")


@pytest.fixture(scope="module")
def measurements(tmp_path_factory):
    """STREAM kernels 'measured' on an H100 whose HBM efficiency and launch cost we know."""
    path = tmp_path_factory.mktemp("m") / "elementwise.json"
    write_stream(path, TRUTH, SIZES)
    return path


@pytest.fixture(scope="module")
def fitted(measurements) -> Fit:
    """The fit of ``FIT`` to ``measurements`` (one fit, read by several tests)."""
    cases = prepare(read_measurements([measurements]), "h100-sxm")
    return fit(cases, "h100-sxm", [p for p in DEFAULT_PARAMETERS if p.path in FIT])


def test_split_is_deterministic_and_holds_some_out():
    ids = [f"record-{i}" for i in range(100)]
    held = [i for i in ids if is_held_out(i)]
    assert held == [i for i in ids if is_held_out(i)]
    assert 15 <= len(held) <= 45


def test_fit_recovers_the_true_parameters(fitted):
    result = fitted
    assert result.held_out, "the split should hold some records out"
    assert result.values["hbm.efficiency"] == pytest.approx(0.7, rel=0.01)
    assert result.values["launch_overhead"] == pytest.approx(6e-6, rel=0.05)
    assert abs(result.held_out_errors).max() < 0.01
    assert abs(result.start_train_errors).mean() > 5 * abs(result.train_errors).mean()


def test_calibrate_then_validate(cli, measurements, tmp_path):
    overlay = tmp_path / "h100-sxm-calibrated.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(measurements), "--fit", "hbm.efficiency",
                 "-o", str(overlay))
    assert result.code == 0, result.err
    assert "sweep 1: hbm.efficiency=" in result.err  # progress, one line per line search
    data = yaml.safe_load(overlay.read_text())
    assert data["extends"] == "h100-sxm"
    assert data["hbm"]["efficiency"]["basis"] == "fitted"
    assert "training records" in data["hbm"]["efficiency"]["source"]
    assert data["uncertainty"]["elementwise"]["records"] >= 3
    summary = json.loads(cli("simulate", "--arch", str(overlay), "--kernel", "elementwise", "--param",
                             "elements=16777216", "--param", "dtype=fp32", "--json").out)
    assert summary["latency_s_p05"] <= summary["latency_s_p95"]
    report_dir = tmp_path / "report"
    assert cli("validate", "--arch", str(overlay), "--measurements", str(measurements), "-o", str(report_dir)).code == 0
    text = (report_dir / "report.md").read_text()
    assert "held-out" in text and "elementwise" in text
    assert (report_dir / "predicted_vs_measured.png").exists()


def test_source_date_epoch_makes_the_overlay_byte_identical(cli, measurements, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(365 * 86400))  # 1971-01-01
    outputs = [tmp_path / "a" / "fit.yaml", tmp_path / "b" / "fit.yaml"]  # one name: the overlay is named so
    for overlay in outputs:
        overlay.parent.mkdir()
        assert cli("calibrate", "--arch", "h100-sxm", "--measurements", str(measurements), "--fit", "hbm.efficiency",
                   "-o", str(overlay)).code == 0
    text = outputs[0].read_text()
    assert "1971-01-01" in text
    assert outputs[1].read_text() == text


@pytest.mark.parametrize("epoch", ["yesterday", "-5", "1e9", "99999999999999"])
def test_bad_source_date_epoch_is_refused_before_the_fit(cli, measurements, tmp_path, monkeypatch, epoch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    overlay = tmp_path / "x.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(measurements), "--fit", "hbm.efficiency",
                 "-o", str(overlay))
    assert result.code == 2
    assert "SOURCE_DATE_EPOCH" in result.err and "whole seconds since 1970" in result.err
    assert "sweep 1" not in result.err and not overlay.exists()


def test_a_scoped_fit_starts_from_the_value_the_chip_gives_that_family(cli, measurements, tmp_path):
    """A config that already scopes hbm.efficiency to elementwise: refitting it for elementwise
    starts there (and its prior stays near it), not at the chip-wide value. (Named as the
    records' chip: calibrate refuses *-calibrated overlays.)"""
    base = tmp_path / "scoped.yaml"
    base.write_text("extends: h100-sxm\nname: h100-sxm\nfamily_values:\n  elementwise:\n"
                    "    hbm.efficiency: {value: 0.66, basis: fitted, source: test}\n")
    overlay = tmp_path / "refit.yaml"
    result = cli("calibrate", "--arch", str(base), "--measurements", str(measurements), "--fit", "hbm.efficiency",
                 "--scope", "elementwise", "-o", str(overlay))
    assert result.code == 0, result.err
    fitted = yaml.safe_load(overlay.read_text())["family_values"]["elementwise"]["hbm.efficiency"]
    assert "value before fitting 0.66" in fitted["note"]


def test_final_errors_use_the_configs_picked_on_the_fitted_chip(measurements, tmp_path):
    """Records that name no config: the fit keeps the configs picked on the starting chip;
    its final errors (the overlay's notes and interval) are taken again with the configs
    config=auto picks on the fitted chip, as validate predicts."""
    data = json.loads(measurements.read_text())
    for record in data["records"]:
        record.pop("config")
    bare = tmp_path / "elementwise.json"
    bare.write_text(json.dumps(data))
    records = read_measurements([str(bare)])
    stale = prepare(records, "h100-sxm", ["cores.count=4"])  # picked on another chip
    fit_result = Fit(arch="h100-sxm", values={}, start={}, skipped=[], evaluations=0,
                     train=[c for c in stale if not is_held_out(c.measurement.id)],
                     held_out=[c for c in stale if is_held_out(c.measurement.id)],
                     train_errors=np.array([]), held_out_errors=np.array([]),
                     start_train_errors=np.array([]), start_held_out_errors=np.array([]))
    final = with_final_configs(fit_result, "h100-sxm")
    fresh = {c.measurement.id: c for c in prepare(records, "h100-sxm")}
    cases = [*final.train, *final.held_out]
    assert [c.config for c in cases] == [fresh[c.measurement.id].config for c in cases]
    assert any(c.config != s.config for c, s in zip(cases, [*fit_result.train, *fit_result.held_out]))
    assert np.array_equal(final.held_out_errors, errors(final.held_out, "h100-sxm", []))


def test_unknown_fit_parameter_is_bad_input(cli, measurements, tmp_path):
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(measurements), "--fit", "hbm.bandwith",
                 "-o", str(tmp_path / "x.yaml"))
    assert result.code == 2
    assert "hbm.bandwith" in result.err


def test_no_records_for_the_arch_is_bad_input(cli, measurements, tmp_path):
    result = cli("calibrate", "--arch", "tpu-v5e", "--measurements", str(measurements), "-o", str(tmp_path / "x.yaml"))
    assert result.code == 2
    assert "no measurement records for arch 'tpu-v5e'" in result.err


def test_kendall_tau():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)


def test_hbm_queueing_can_be_named_but_is_not_fitted_by_default():
    from accelsim.cli.calibrate_cmd import chosen_parameters

    assert [p.path for p in chosen_parameters(["hbm.queueing_latency"])] == ["hbm.queueing_latency"]
    assert "hbm.queueing_latency" not in [p.path for p in chosen_parameters([])]


def test_well_determined_values_are_not_flagged(fitted):
    assert fitted.held_by_prior == [] and fitted.at_bound == []


def test_records_no_value_explains_leave_a_parameter_at_its_bound(cli, measurements, tmp_path):
    data = json.loads(measurements.read_text())
    for record in data["records"]:
        record["latency_s"] *= 100
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(data))
    overlay = tmp_path / "o.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(slow), "--fit", "hbm.efficiency",
                 "-o", str(overlay))
    assert result.code == 0 and "hbm.efficiency stopped at a search bound" in result.err
    assert "at its search bound" in yaml.safe_load(overlay.read_text())["hbm"]["efficiency"]["note"]


def test_set_values_go_into_the_overlay_so_it_predicts_what_the_fit_did(cli, measurements, tmp_path):
    overlay = tmp_path / "o.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(measurements), "--fit", "hbm.efficiency",
                 "--set", "hbm.latency=2us", "-o", str(overlay))
    assert result.code == 0, result.err
    given = yaml.safe_load(overlay.read_text())["hbm"]["latency"]
    assert given["value"] == "2us" and given["basis"] == "override" and "--set hbm.latency=2us" in given["source"]
    fitted = re.search(r"train\s+MAPE \S+ -> (\S+) ", result.out)[1]
    report = tmp_path / "v"
    assert cli("validate", "--arch", str(overlay), "--measurements", str(measurements), "-o", str(report)).code == 0
    assert re.search(r"\| fitted \| elementwise \| \d+ \| (\S+) \|", (report / "report.md").read_text())[1] == fitted


def test_records_all_held_out_are_refused_before_any_work(cli, tmp_path):
    ids = [i for i in (f"r{n}" for n in range(200)) if is_held_out(i)][:2]
    records = [{"id": i, "family": "copy", "params": {"bytes": 2**20}, "latency_s": 1e-5} for i in ids]
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"schema_version": 1, "kind": "measurements", "family": "copy",
                                "device": {"name": "x", "arch": "h100-sxm"},
                                "provenance": {"date": None, "command": "t", "versions": {}, "clocks": None,
                                               "source": "t"}, "records": records}))
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "o.yaml"))
    assert result.code == 2 and result.err.count("\n") == 1 and "held-out split" in result.err
