"""The fit's prior: a parameter moved a factor of ``PRIOR_FACTOR`` from its published value
costs what one training record off by ``LOSS_SCALE`` does, so what the records determine
moves and what they cannot tell apart stays near its published value."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from accelsim.validate import calibrate
from accelsim.validate.calibrate import LOSS_SCALE, PRIOR_FACTOR, loss, prior_loss


def test_a_factor_of_two_costs_one_record_off_by_the_loss_scale():
    start = {"a": 2.0, "b": 3e-6, "c": 0.0}
    assert prior_loss(start, start) == 0.0
    one_record = loss(np.array([LOSS_SCALE]))
    assert prior_loss({**start, "a": 2.0 * PRIOR_FACTOR}, start) == pytest.approx(one_record)
    assert prior_loss({**start, "b": 3e-6 / PRIOR_FACTOR}, start) == pytest.approx(one_record)
    assert prior_loss({**start, "c": 5.0}, start) == 0.0  # no prior for what starts at 0
    assert prior_loss({**start, "b": 3e-4}, start) > 5 * one_record


def test_a_parameter_that_buys_little_fit_stays_near_its_published_value(monkeypatch):
    """Synthetic records: the matrix efficiency explains them (true value 0.6), and what is
    left (+-1% in alternate records) a per-program overhead would cancel only at its 5 us
    bound, fifty times its published 100 ns. Without the prior the overhead runs to the
    bound for that 1%; with it, it stays within a factor of two."""
    def errors(chips, cases, values):
        overhead = values.get("cores.program_overhead", 1e-7)
        left = 0.01 * (1 - math.log(overhead / 1e-7) / math.log(50))
        signs = np.array([(-1) ** i for i in range(len(cases))])
        return math.log(0.6 / values.get("matrix_unit.efficiency", 0.85)) + left * signs

    monkeypatch.setattr(calibrate, "fit_errors", errors)
    records = [f"record-{i}" for i in range(40) if not calibrate.is_held_out(f"record-{i}")][:6]
    cases = [calibrate.Case(SimpleNamespace(id=r, family="gemm"), None, {}) for r in records]
    fitted = ("matrix_unit.efficiency", "cores.program_overhead")
    result = calibrate.fit(cases, "h100-sxm", [p for p in calibrate.DEFAULT_PARAMETERS if p.path in fitted])
    assert result.values["matrix_unit.efficiency"] == pytest.approx(0.6, rel=0.01)
    overhead = result.values.get("cores.program_overhead", 1e-7)
    assert abs(math.log(overhead / 1e-7)) <= math.log(PRIOR_FACTOR)
