"""``simulate --json`` carries ``latency_s_p05`` / ``latency_s_p95`` exactly when the chip's
config has held-out residuals for the kernel's family (docs/accuracy.md, "Uncertainty
intervals")."""

from __future__ import annotations

import json
import pytest
import yaml

OVERLAY_TEXT = """\
extends: a100-sxm4-80gb
name: a100-banded
uncertainty:
  rmsnorm: {p05: -0.0525, p95: -0.0174, records: 4, source: test}
"""
"""A calibrated overlay's band for one family (what calibrate writes), nothing else."""
RMSNORM = ("--kernel", "rmsnorm", "--param", "rows=2048", "--param", "cols=4096", "--param", "dtype=bf16", "--json")


@pytest.fixture
def overlay(tmp_path) -> str:
    path = tmp_path / "a100-banded.yaml"
    path.write_text(OVERLAY_TEXT)
    return str(path)


def _simulate(cli, arch, *args):
    result = cli("simulate", "--arch", arch, *args)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_interval_from_the_families_held_out_residuals(cli, overlay):
    band = yaml.safe_load(OVERLAY_TEXT)["uncertainty"]["rmsnorm"]
    summary = _simulate(cli, overlay, *RMSNORM)
    assert summary["latency_s_p05"] == pytest.approx(summary["latency_s"] / (1 + band["p95"]))
    assert summary["latency_s_p95"] == pytest.approx(summary["latency_s"] / (1 + band["p05"]))


@pytest.mark.parametrize("banded, args", [
    (False, RMSNORM),  # published config: nothing fitted, no residuals
    (True, ("--kernel", "copy", "--param", "bytes=1048576", "--json")),  # no copy residuals
])
def test_no_interval_without_residuals(cli, overlay, banded, args):
    summary = _simulate(cli, overlay if banded else "a100-sxm4-80gb", *args)
    assert "latency_s_p05" not in summary and "latency_s_p95" not in summary


def test_no_interval_for_a_what_if_chip(cli, overlay):
    """The residuals were measured on the chip as fitted, not on one with twice its HBM."""
    summary = _simulate(cli, overlay, *RMSNORM, "--set", "hbm.bandwidth=4 TB/s")
    assert "latency_s_p05" not in summary and "latency_s_p95" not in summary
    kept = _simulate(cli, overlay, *RMSNORM, "--set", "uncertainty.rmsnorm.p05=-0.2")
    assert kept["latency_s_p95"] == pytest.approx(kept["latency_s"] / 0.8)
