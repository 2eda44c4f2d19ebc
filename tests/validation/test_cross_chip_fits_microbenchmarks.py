"""validation/cross_chip.py fits each source chip on its microbenchmark-level records only
(calibrate refuses kernel-level ones), on calibrate's default parameters but the matrix
efficiencies, and transfers only what that fit marked fitted."""

from __future__ import annotations

import sys

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation"))

import cross_chip as xc  # noqa: E402

from accelsim.validate.calibrate import BOOST_REFERENCE_CLOCKS, DEFAULT_PARAMETERS  # noqa: E402
from accelsim.validate.compare import read_measurements  # noqa: E402
from accelsim.validate.levels import is_microbenchmark_level  # noqa: E402


def test_every_source_fits_on_microbenchmark_level_files_only():
    for transfer in xc.TRANSFERS:
        files = xc.microbenchmark_files(transfer.source)
        assert files, transfer.source
        records = [m for m in read_measurements(files) if m.arch == transfer.source]
        assert records and all(is_microbenchmark_level(m) for m in records)


def test_the_fit_leaves_the_matrix_efficiencies_alone():
    assert set(xc.FIT) == {p.path for p in DEFAULT_PARAMETERS} - set(BOOST_REFERENCE_CLOCKS)


def test_a_source_fit_runs_and_transfers_only_fitted_parameters(tmp_path):
    transfer = next(t for t in xc.TRANSFERS if t.source == "a100-sxm4-80gb")
    fitted = xc.calibrate(transfer, tmp_path)
    assert fitted.overlay.is_file()
    assert fitted.values and {path for path, _, _ in fitted.values} <= set(xc.FIT)
    text = fitted.overlay.read_text(encoding="utf-8")
    assert "a100-sxm4-80gb/elementwise.json" in text
    assert not any(name in text for name in ("gemm.json", "layernorm.json", "rmsnorm.json"))
    assert all(o.split("=", 1)[0] in xc.FIT for o in fitted.overrides)
