"""``calibrate`` fits hardware parameters on microbenchmark-level records only (STREAM
kernels, copies); kernel-level records (GEMM, attention, norms) are refused for fitting in
one line and stay usable for checking (``validate``, ``calibrate --bands-only``)."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError
from accelsim.families import FAMILIES
from accelsim.validate.compare import Measurement
from accelsim.validate.levels import MICROBENCHMARK_FAMILIES, is_microbenchmark_level, refuse_kernel_level
from tests.synthetic_measurements import write_rmsnorm


def _record(family: str) -> Measurement:
    return Measurement(id=f"{family}-1", arch="h100-sxm", family=family, implementation="x", params={},
                       latency_s=1e-5, source="test", file=f"m/{family}.json")


def test_only_streaming_families_are_microbenchmark_level():
    assert set(MICROBENCHMARK_FAMILIES) == {"elementwise", "copy"} < set(FAMILIES)
    assert [f for f in FAMILIES if is_microbenchmark_level(_record(f))] == ["copy", "elementwise"]


def test_the_refusal_names_the_file_and_the_families():
    refuse_kernel_level([_record("elementwise"), _record("copy")])  # nothing to refuse
    with pytest.raises(InputError) as caught:
        refuse_kernel_level([_record("elementwise"), _record("gemm"), _record("attention")])
    line = caught.value.one_line()
    assert "2 kernel-level records (attention, gemm; first in m/gemm.json)" in line
    assert line.startswith("measurements: ") and len(line) < 300  # the CLI names its --measurements


def test_calibrate_refuses_kernel_records_before_any_work(cli, tmp_path):
    path = tmp_path / "rmsnorm.json"
    write_rmsnorm(path, [], [(1024, 1024), (4096, 4096), (16384, 1024)])
    overlay = tmp_path / "fit.yaml"
    result = cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), "--fit", "hbm.efficiency",
                 "-o", str(overlay))
    assert result.code == 2 and result.err.count("\n") == 1
    assert "kernel-level records (rmsnorm" in result.err and str(path) in result.err
    assert result.err.startswith("accelsim: error: --measurements: ")
    assert not overlay.exists()
    # checking is not fitting: the same records give a band of residuals, and a report
    assert cli("calibrate", "--arch", "h100-sxm", "--measurements", str(path), "--bands-only",
               "-o", str(overlay)).code == 0
    assert cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "r")).code == 0
