"""A point that fails is recorded with its error; the other points still run."""

from __future__ import annotations

import csv

from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep
from tests import conftest

TRACE = conftest.REPO / "traces" / "triton" / "matmul_512.json"


def test_failed_point_is_recorded_and_the_sweep_goes_on(spec_file, tmp_path):
    # the captured kernel needs more shared memory per program than 1 KiB
    plan = plan_sweep(spec_file(f"""\
        base: h100-sxm
        parameters:
          local_memory.max_per_program: {{values: ["227 KiB", "1 KiB"]}}
        workloads:
          - trace: {TRACE}
          - kernel: copy
            params: {{bytes: 1048576}}
        """))
    outcome = run_sweep(plan, tmp_path / "out", progress=False)
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert [r["status"] for r in rows] == ["ok", "ok", "error", "ok"]
    assert "local memory" in rows[2]["error"] and rows[2]["latency_s"] == ""
    assert float(rows[3]["latency_s"]) > 0
    assert "## Failed runs" in (tmp_path / "out" / "summary.md").read_text()
    assert sum(r.status == "error" for r in outcome.records) == 1
