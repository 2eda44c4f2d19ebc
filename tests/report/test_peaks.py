"""A kernel's place under the chip's roofs: achieved compute and HBM bandwidth as shares
of the datasheet peaks, arithmetic intensity and the ridge point, in simulate's table and
--json."""

from __future__ import annotations

import json

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import run_config
from accelsim.report.peaks import compute_peak, roofline_figures

GEMM = ("--kernel", "gemm", "--param", "M=2048", "--param", "N=2048", "--param", "K=2048")
NORM = ("--kernel", "rmsnorm", "--param", "rows=4096", "--param", "cols=4096")


def _trace(family: str, params: dict, arch: str):
    chip = load_arch(arch)
    fam = get_family(family)
    problem = {p.name: p.default for p in fam.params} | params
    return run_config(fam, problem, fam.resolve_config(problem, {}, chip), chip).trace, chip


def test_a_gemm_is_measured_against_its_dtypes_matrix_peak():
    trace, chip = _trace("gemm", {"M": 512, "N": 512, "K": 512, "dtype": "fp8"}, "h100-sxm")
    assert compute_peak(trace, chip) == (chip.datasheet_matrix_flops_per_s("fp8"), "fp8 matrix")


def test_a_norm_is_measured_against_the_vector_peak():
    trace, chip = _trace("rmsnorm", {"rows": 256, "cols": 1024}, "tpu-v5e")
    peak, of = compute_peak(trace, chip)
    assert of.endswith(" vector") and peak == chip.datasheet_vector_flops_per_s(of.split()[0])


def test_the_json_figures_follow_from_the_summary(cli):
    s = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM, "--json").out)
    chip = load_arch("h100-sxm")
    assert s["peak_flops_per_s"] == chip.datasheet_matrix_flops_per_s("bf16") and s["peak_flops_of"] == "bf16 matrix"
    assert s["flops_fraction_of_peak"] == pytest.approx(s["achieved_flops_per_s"] / s["peak_flops_per_s"], rel=1e-12)
    assert s["peak_hbm_bytes_per_s"] == chip.hbm.bandwidth_bytes_per_s
    assert s["hbm_fraction_of_peak"] == pytest.approx(s["achieved_hbm_bytes_per_s"] / s["peak_hbm_bytes_per_s"])
    assert s["arithmetic_intensity_flops_per_byte"] == pytest.approx(s["flops"] / s["hbm_bytes"])
    assert s["ridge_point_flops_per_byte"] == pytest.approx(s["peak_flops_per_s"] / s["peak_hbm_bytes_per_s"])
    assert 0 < s["flops_fraction_of_peak"] <= 1 and 0 < s["hbm_fraction_of_peak"] <= 1


def test_a_memory_bound_kernel_sits_below_the_ridge_near_the_hbm_peak(cli):
    s = json.loads(cli("simulate", "--arch", "h100-sxm", *NORM, "--json").out)
    assert s["bound"] == "hbm" and s["arithmetic_intensity_flops_per_byte"] < s["ridge_point_flops_per_byte"]
    assert s["hbm_fraction_of_peak"] > 0.5 > s["flops_fraction_of_peak"]


def test_a_what_if_peak_moves_the_shares(cli):
    base = json.loads(cli("simulate", "--arch", "tpu-v5e", *GEMM, "--json").out)
    bigger = json.loads(cli("simulate", "--arch", "tpu-v5e", *GEMM, "--set", "matrix_unit.units_per_core=8",
                            "--json").out)
    assert bigger["peak_flops_per_s"] == 2 * base["peak_flops_per_s"]
    assert bigger["ridge_point_flops_per_byte"] == 2 * base["ridge_point_flops_per_byte"]


class _Result(dict):
    """A kernel result's figures, read as keys (a ``--json`` summary) or as fields (a result record)."""

    __getattr__ = dict.__getitem__


def test_no_hbm_traffic_has_no_intensity():
    trace, chip = _trace("gemm", {"M": 256, "N": 256, "K": 256}, "h100-sxm")
    figures = roofline_figures(_Result(hbm_bytes=0.0, flops=1.0, achieved_flops_per_s=1.0,
                                       achieved_hbm_bytes_per_s=0.0), trace, chip)
    assert figures["arithmetic_intensity_flops_per_byte"] is None and figures["hbm_fraction_of_peak"] == 0


def test_the_table_shows_the_shares_and_the_ridge_point(cli):
    out = cli("simulate", "--arch", "h100-sxm", *GEMM).out
    rows = {line[:22].strip(): line[22:].strip() for line in out.splitlines()}
    assert "% of the 989.4 TFLOP/s bf16 matrix peak)" in rows["achieved compute"]
    assert "% of 3.35 TB/s)" in rows["achieved HBM bandwidth"]
    assert "flop/byte (the chip's ridge point: 295.4 flop/byte)" in rows["arithmetic intensity"]
