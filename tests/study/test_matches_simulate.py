"""A sweep point gives what `accelsim simulate --set ...` gives for the same overrides."""

from __future__ import annotations

import csv
import json

from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep


def test_each_row_matches_simulate_with_the_same_overrides(cli, spec_file, tmp_path):
    plan = plan_sweep(spec_file("""\
        base: tpu-v5e
        parameters:
          hbm.bandwidth: {values: ["0.4 TB/s", "1.6 TB/s"]}
          matrix_unit.shape: {values: [[128, 128], [256, 256]]}
        workloads:
          - kernel: attention
            params: {heads: 8, seq_q: 512, head_dim: 64, causal: true}
        metrics: [latency_s, hbm_bytes]
        """))
    run_sweep(plan, tmp_path / "out", progress=False)
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert len(rows) == 4
    for point, row in zip(plan.points, rows):
        sets = [arg for override in point.overrides for arg in ("--set", override)]
        result = cli("simulate", "--arch", "tpu-v5e", "--kernel", "attention", "--param", "heads=8",
                     "--param", "seq_q=512", "--param", "head_dim=64", "--param", "causal=true", *sets, "--json")
        assert result.code == 0, result.err
        expected = json.loads(result.out)
        assert float(row["latency_s"]) == float(f"{expected['latency_s']:.9g}")
        assert row["bound"] == expected["bound"]


def test_a_calibrated_chips_family_values_hold_in_a_sweep(cli, spec_file, tmp_path):
    """h100-sxm-calibrated scopes its attention fit to attention kernels (family_values):
    a sweep on it runs attention with those values, as simulate does."""
    plan = plan_sweep(spec_file("""\
        base: h100-sxm-calibrated
        parameters:
          hbm.bandwidth: {values: ["3.35 TB/s", "4 TB/s"]}
        workloads:
          - kernel: attention
            params: {batch: 4, heads: 16, seq_q: 1024, head_dim: 128, causal: true}
        metrics: [latency_s]
        """))
    run_sweep(plan, tmp_path / "out", progress=False)
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    for point, row in zip(plan.points, rows):
        sets = [arg for override in point.overrides for arg in ("--set", override)]
        result = cli("simulate", "--arch", "h100-sxm-calibrated", "--kernel", "attention", "--param", "batch=4",
                     "--param", "heads=16", "--param", "seq_q=1024", "--param", "head_dim=128",
                     "--param", "causal=true", *sets, "--json")
        assert result.code == 0, result.err
        assert float(row["latency_s"]) == float(f"{json.loads(result.out)['latency_s']:.9g}")


def test_a_range_point_is_simulated_at_the_value_results_csv_reports(cli, spec_file, tmp_path):
    """Values a range computes (1.1666... TB/s) are written to six digits for --set; the table
    reports the value that was set, so simulate at the reported value gives the row's latency."""
    plan = plan_sweep(spec_file("""\
        base: h100-sxm
        parameters:
          hbm.bandwidth: {range: {start: "1 TB/s", stop: "2 TB/s", num: 4}}
        workloads:
          - kernel: rmsnorm
            params: {rows: 4096, cols: 4096}
        metrics: [latency_s]
        """))
    run_sweep(plan, tmp_path / "out", progress=False)
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert [row["hbm.bandwidth"] for row in rows] == ["1e+12", "1.33333e+12", "1.66667e+12", "2e+12"]
    for row in rows:
        result = cli("simulate", "--arch", "h100-sxm", "--kernel", "rmsnorm", "--param", "rows=4096",
                     "--param", "cols=4096", "--set", f"hbm.bandwidth={row['hbm.bandwidth']} B/s", "--json")
        assert result.code == 0, result.err
        assert float(row["latency_s"]) == float(f"{json.loads(result.out)['latency_s']:.9g}")
