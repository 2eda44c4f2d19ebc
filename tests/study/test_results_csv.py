"""results.csv: one row per point x workload with every varied parameter and metric."""

from __future__ import annotations

import csv

from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep
from tests.study.conftest import HBM_SWEEP


def test_columns_rows_and_values(spec_file, tmp_path):
    spec = HBM_SWEEP.replace("metrics: [latency_s, achieved_flops_per_s]", "metrics: [latency_s, utilization.*, config]")
    run_sweep(plan_sweep(spec_file(spec)), tmp_path / "out", progress=False)
    with (tmp_path / "out" / "results.csv").open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        header = reader.fieldnames
    assert header[:4] == ["point", "hbm.bandwidth", "workload", "latency_s"]
    assert header[4] == "bound"
    assert {"utilization.hbm", "utilization.matrix_unit"} <= set(header)
    assert header[-3:] == ["config", "status", "error"]
    assert [(r["point"], r["workload"]) for r in rows] == [
        (str(p), w) for p in range(3) for w in ("gemm M=1024 N=1024 K=1024", "rmsnorm rows=2048 cols=1024")
    ]
    assert [float(r["hbm.bandwidth"]) for r in rows[::2]] == [0.5e12, 2e12, 8e12]
    norm = [float(r["latency_s"]) for r in rows[1::2]]
    assert norm[0] > norm[1] > norm[2]  # a memory-bound kernel speeds up with HBM bandwidth
    assert rows[1]["bound"] == "hbm" and rows[0]["config"].startswith("block_m=")  # rmsnorm at 0.5 TB/s
