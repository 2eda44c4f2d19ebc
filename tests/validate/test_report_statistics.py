"""The statistics the validation report and calibrated configs show, against independent
reference computations: numpy's percentiles and means, an O(n^2) Kendall tau-b, and the
interval a prediction's measured latency falls in."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from accelsim.cli.simulate_cmd import latency_interval
from accelsim.validate.calibrate import Case, intervals, is_held_out
from accelsim.validate.compare import Comparison, Measurement, kendall_tau, summarise


def _tau_b_reference(x, y) -> float:
    """Kendall tau-b by definition: (C - D) / sqrt((n0 - n1)(n0 - n2)), n1 and n2 the
    pairs tied in x and in y (a pair tied in both counts in both)."""
    n = len(x)
    c = d = n1 = n2 = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            n1 += dx == 0
            n2 += dy == 0
            c += dx * dy > 0
            d += dx * dy < 0
    n0 = n * (n - 1) // 2
    den = math.sqrt((n0 - n1) * (n0 - n2))
    return (c - d) / den if den else math.nan


def test_kendall_tau_is_tau_b_on_random_rankings_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(2, 12))
        x = rng.integers(0, rng.integers(1, 5), n).astype(float).tolist()
        y = rng.integers(0, rng.integers(1, 5), n).astype(float).tolist()
        expected = _tau_b_reference(x, y)
        got = kendall_tau(x, y)
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-12)
    # by hand: 4 concordant, 0 discordant, one pair tied in each ranking: 4 / sqrt(5 * 5)
    assert kendall_tau([1, 2, 2, 3], [1, 1, 2, 3]) == pytest.approx(0.8)


def _comparison(record_id: str, family: str, measured: float, predicted: float) -> Comparison:
    m = Measurement(id=record_id, arch="h100-sxm", family=family, implementation="x", params={},
                    latency_s=measured, source="", file="test")
    return Comparison(m, predicted, "hbm", {})


def test_summary_matches_numpy():
    rng = np.random.default_rng(2)
    comparisons = [_comparison(f"r{i}", "gemm" if i % 3 else "softmax", 1e-4, 1e-4 * (1 + e))
                   for i, e in enumerate(rng.normal(0, 0.2, 41).clip(-0.9))]
    for s in summarise(comparisons, key=lambda c: (c.measurement.family,)):
        e = np.array([c.error for c in comparisons if c.measurement.family == s.group[0]])
        assert s.count == len(e)
        assert s.mape == pytest.approx(np.mean(np.abs(e)))
        assert s.median_abs == pytest.approx(np.median(np.abs(e)))
        assert s.p90_abs == pytest.approx(np.percentile(np.abs(e), 90))  # linear interpolation
        assert s.mean_signed == pytest.approx(np.mean(e))
        assert abs(s.worst.error) == pytest.approx(np.max(np.abs(e)))


@pytest.mark.parametrize("residuals", [[-0.3, -0.2, -0.1, -0.25], [0.05, 0.2, 0.1], [-0.2, 0.1, 0.3, -0.05, 0.0]])
def test_interval_holds_the_measured_latency_given_the_prediction(residuals):
    """Residuals are predicted / measured - 1, so the measured latency is predicted / (1 + r):
    the interval must hold it, be ordered, and lie wholly above (below) the prediction when
    every residual says the prediction is too fast (slow)."""
    cases = [Case(_comparison(f"r{i}", "gemm", 1.0, 1.0 + r).measurement, None, {}) for i, r in enumerate(residuals)]
    (p05, p95, count), = intervals(cases, np.log1p(np.array(residuals))).values()
    assert count == len(residuals)
    assert p05 == pytest.approx(np.percentile(residuals, 5)) and p95 == pytest.approx(np.percentile(residuals, 95))
    assert p05 <= p95
    predicted = 2e-4
    low, high = latency_interval(predicted, SimpleNamespace(uncertainty={"gemm": (p05, p95)}), "gemm")
    assert low <= high
    measured = [predicted / (1 + r) for r in residuals]
    inside = [low * (1 - 1e-12) <= m <= high * (1 + 1e-12) for m in measured]
    assert sum(inside) >= len(residuals) - 2  # all but the tails beyond p05 / p95
    if max(residuals) < 0:
        assert low > predicted  # predicted too fast: the hardware is slower
    if min(residuals) > 0:
        assert high < predicted


def test_report_status_column_is_the_calibration_split(tmp_path):
    """Records of a file a fit used are fitted or held out by the calibration split; the
    others were never fitted."""
    from accelsim.arch.model import load_arch
    from accelsim.report.validation import write_report
    from accelsim.validate.fit_status import FitRecord

    comparisons = [_comparison(f"gemm-{i}", "gemm", 1e-4, 1.1e-4) for i in range(20)]
    comparisons += [replace(c, measurement=replace(c.measurement, id=f"other-{i}", file="other"))
                    for i, c in enumerate(comparisons[:3])]
    text = write_report(comparisons, load_arch("h100-sxm"), tmp_path, "test",
                        status=FitRecord(frozenset({"test"})).status).read_text()
    rows = text.split("## Every record")[1].splitlines()[4:]
    status = {cells[1].strip(): cells[2].strip() for cells in (r.split("|") for r in rows if r.startswith("|"))}
    assert status == {**{f"gemm-{i}": "held-out" if is_held_out(f"gemm-{i}") else "fitted" for i in range(20)},
                      **{f"other-{i}": "never fitted" for i in range(3)}}
    held = sum(is_held_out(f"gemm-{i}") for i in range(20))
    assert f"| held-out | gemm | {held} |" in text and f"| fitted | gemm | {20 - held} |" in text
    assert "| never fitted | gemm | 3 |" in text
