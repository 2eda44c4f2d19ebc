"""Calibration in worker processes (``--jobs``) simulates the same records with the same
numbers: the fit does not depend on how many processes run it."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.validate.calibrate import DEFAULT_PARAMETERS, fit, prepare, with_final_configs
from accelsim.validate.compare import read_measurements
from tests.validate.test_calibrate import FIT, measurements  # noqa: F401  (the synthetic rmsnorm records)


def test_two_workers_fit_what_one_does(measurements):  # noqa: F811
    cases = prepare(read_measurements([measurements]), "h100-sxm")
    parameters = [p for p in DEFAULT_PARAMETERS if p.path in FIT]
    alone = fit(cases, "h100-sxm", parameters, sweeps=2)
    shared = fit(cases, "h100-sxm", parameters, sweeps=2, jobs=2)
    assert shared.values == alone.values
    assert np.array_equal(shared.held_out_errors, alone.held_out_errors)
    assert shared.evaluations == alone.evaluations


@pytest.mark.parametrize("jobs", ["0", "100000"])
def test_jobs_out_of_range_is_bad_input(cli, measurements, tmp_path, jobs):  # noqa: F811
    """Below one, or past 1024 (a fork pool would start every process at once)."""
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(measurements), "--jobs", jobs,
                 "-o", str(tmp_path / "x.yaml"))
    assert result.code == 2
    assert f"--jobs: expected 1 to 1024 worker processes, got {jobs}" in result.err
    assert not (tmp_path / "x.yaml").exists()


def test_two_workers_prepare_what_one_does(measurements):  # noqa: F811
    records = read_measurements([measurements])
    alone = prepare(records, "h100-sxm")
    shared = prepare(records, "h100-sxm", jobs=2)
    assert [(c.measurement.id, c.config) for c in shared] == [(c.measurement.id, c.config) for c in alone]
    assert [c.trace.model_dump() for c in shared] == [c.trace.model_dump() for c in alone]


def test_final_errors_keep_the_fit_split_with_workers(measurements):  # noqa: F811
    """Worker processes return copies of the records: the final errors keep the fit's own
    train and held-out records (they once all landed in train with --jobs 2)."""
    cases = prepare(read_measurements([measurements]), "h100-sxm")
    result = fit(cases, "h100-sxm", [p for p in DEFAULT_PARAMETERS if p.path == "hbm.efficiency"])
    assert result.held_out
    for jobs in (1, 2):
        final = with_final_configs(result, "h100-sxm", jobs=jobs)
        assert [c.measurement.id for c in final.train] == [c.measurement.id for c in result.train]
        assert [c.measurement.id for c in final.held_out] == [c.measurement.id for c in result.held_out]
