"""``accelsim calibrate --bands-only``: nothing fitted, the config as given (with its --set
values), and per family the 5th and 95th percentile of every record's residuals."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.families.search import autotune
from tests.synthetic_measurements import write_rmsnorm, write_stream

SHAPES = [(rows, cols) for rows in (512, 4096, 16384) for cols in (1024, 8192)]


@pytest.fixture(scope="module")
def measurements(tmp_path_factory):
    """rmsnorm 'measured' on an H100 with a slower HBM, each record off by its own factor."""
    path = tmp_path_factory.mktemp("m") / "rmsnorm.json"
    return path, write_rmsnorm(path, ["hbm.efficiency=0.7"], SHAPES, lambda i: 1 + 0.02 * i)


def test_bands_are_every_records_residuals_and_nothing_is_fitted(cli, measurements, tmp_path):
    path, records = measurements
    overlay = tmp_path / "bands.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--set", "hbm.efficiency=0.75", "--measurements", str(path),
                 "--bands-only", "-o", str(overlay))
    assert result.code == 0, result.err
    data = yaml.safe_load(overlay.read_text())
    assert data["extends"] == "h100-sxm"
    assert data["hbm"]["efficiency"]["basis"] == "override"  # the --set value, not a fit
    assert not any(isinstance(v, dict) and v.get("basis") == "fitted" for v in data.values())
    band = data["uncertainty"]["rmsnorm"]
    assert band["records"] == len(records) and "none fitted" in band["source"]
    chip = load_arch("h100-sxm", ["hbm.efficiency=0.75"])
    family = get_family("rmsnorm")
    residuals = []
    for r in records:
        params = parse_values(family.params, r["params"], "test")
        best = autotune(family, params, chip)[0]
        residuals.append(best.sim.latency_s / r["latency_s"] - 1)
    assert band["p05"] == pytest.approx(np.percentile(residuals, 5), abs=1e-4)
    assert band["p95"] == pytest.approx(np.percentile(residuals, 95), abs=1e-4)
    summary = json.loads(cli("simulate", "--arch", str(overlay), "--kernel", "rmsnorm", "--param", "rows=4096",
                             "--param", "cols=4096", "--json").out)
    assert summary["latency_s_p05"] == pytest.approx(summary["latency_s"] / (1 + band["p95"]))
    assert summary["latency_s_p95"] == pytest.approx(summary["latency_s"] / (1 + band["p05"]))


@pytest.mark.parametrize("extra", [["--fit", "hbm.efficiency"], ["--scope", "rmsnorm"], ["--split-by", "kernel"],
                                   ["--method", "descent"]])
def test_options_that_fit_or_split_are_refused(cli, measurements, tmp_path, extra):
    path, _ = measurements
    overlay = tmp_path / "x.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), "--bands-only", *extra,
                 "-o", str(overlay))
    assert result.code == 2 and extra[0] in result.err and "--bands-only" in result.err
    assert len(result.err.strip().splitlines()) == 1 and not overlay.exists()


def test_a_band_needs_three_records_of_a_family(cli, tmp_path):
    path = tmp_path / "two.json"
    write_rmsnorm(path, [], SHAPES[:2])
    overlay = tmp_path / "x.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), "--bands-only", "-o", str(overlay))
    assert result.code == 2 and "at least 3 records" in result.err and "rmsnorm: 2" in result.err
    assert not overlay.exists()


@pytest.mark.parametrize("mode", [["--bands-only"], ["--fit", "hbm.efficiency"]])
def test_the_output_may_not_be_the_chip_config_it_reads(cli, tmp_path, monkeypatch, mode):
    """--arch names a config; -o at that config's file (or one it extends) would overwrite a
    published config."""
    from accelsim.arch.loader import find_config
    from accelsim.cli import calibrate_cmd

    def no_write(*args, **kwargs):
        raise AssertionError("must not write")

    monkeypatch.setattr(calibrate_cmd, "write_text_atomic", no_write)
    path = tmp_path / "elementwise.json"  # microbenchmark-level: a fit may use them
    write_stream(path, [], [(2**n, 1, 1) for n in (16, 18, 20, 22, 24)])
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), *mode,
                 "-o", str(find_config("h100-sxm")))
    assert result.code == 2 and "also an input" in result.err
