"""``accelsim import profile`` on an Nsight Systems SQLite export: kernels from
CUPTI_ACTIVITY_KIND_KERNEL with their StringIds names, launching ops from PyTorch's NVTX
ranges (shapes, no types: dtypes from the kernel names where they spell one)."""

from __future__ import annotations

import sqlite3

import pytest

from accelsim.importers.profile import measured_step, read_profile
from tests.importers.profile_fixtures import nsys_sqlite


@pytest.fixture
def db(tmp_path):
    return nsys_sqlite(tmp_path)


def _step(path):
    return measured_step(read_profile(path), source=str(path), arch="h100-sxm", device=None, command="t", sha256="0")


def test_kernels_names_grids_and_streams_come_from_the_export(db):
    step = _step(db)
    assert step["device"]["name"] == "NVIDIA H100 80GB HBM3" and step["device"]["multiprocessors"] == 132
    gemm = next(k for k in step["kernels"] if k["name"].startswith("sm90_xmma"))
    assert gemm["grid"] == [24, 64, 1] and gemm["block"] == [384, 1, 1] and gemm["op"] == "aten::mm"
    assert gemm["input_dims"] == [[8192, 4096], [4096, 6144]]
    assert {k["stream"] for k in step["kernels"]} == {"stream 7", "stream 20"}


def test_dtypes_come_from_kernel_names_that_spell_them(db):
    step = _step(db)
    ids = {r["id"] for r in step["records"]}
    assert "gemm-bf16-8192x6144x4096--cublas" in ids and "layernorm-bf16-8192x4096--torch" in ids
    nvjet = [r for r in step["not_recorded"] if r["name"].startswith("nvjet")]
    assert nvjet and "not a GEMM dtype" in nvjet[0]["why"]  # its name spells no dtype; NVTX ranges record none
    flash = [r for r in step["not_recorded"] if "flash_fwd" in r["name"]]
    assert "is_causal input is not recorded" in flash[0]["why"]


def test_an_export_without_kernels_is_refused(cli, tmp_path):
    path = tmp_path / "empty.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    result = cli("import", "profile", str(path), "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "no CUDA kernels" in result.err


def test_a_kernel_ending_before_it_starts_is_refused(cli, db, tmp_path):
    with sqlite3.connect(db) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 3")
    result = cli("import", "profile", str(db), "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "CUPTI_ACTIVITY_KIND_KERNEL row 3" in result.err and "before it starts" in result.err
