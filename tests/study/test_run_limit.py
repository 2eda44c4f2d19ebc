"""A sweep's runs (points x workloads, each workload once per combination of its
``vars``) are counted before anything is expanded: two vars of 1,000 values were
1,000,000 runs accepted, and ``--dry-run`` alone took 128 s."""

import textwrap
import time

from accelsim.study.spec import MAX_RUNS


def _spec(tmp_path, parameters: str, values: int):
    """On a chip whose `clock` a point may set (h100-sxm's boost refuses it)."""
    numbers = ", ".join(str(64 * (i + 1)) for i in range(values))
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(f"""\
        base: a100-sxm4-80gb
        parameters: {parameters}
        workloads:
          - kernel: gemm
            params: {{M: $m, N: $n, K: 256}}
            vars: {{m: [{numbers}], n: [{numbers}]}}
        """))
    return path


def test_vars_count_toward_the_run_limit(cli, tmp_path):
    started = time.perf_counter()
    result = cli("sweep", str(_spec(tmp_path, "{}", 1000)), "--dry-run")
    assert time.perf_counter() - started < 10
    assert result.code == 2 and len(result.err.splitlines()) == 1
    assert result.err.strip().endswith(
        "s.yaml:3: workloads: the sweep would have 1,000,000 runs (1 points x 1,000,000 workloads, each workload "
        f"once per combination of its vars); a sweep may have at most {MAX_RUNS:,}")


def test_points_times_workloads(cli, tmp_path):
    result = cli("sweep", str(_spec(tmp_path, "{clock: {values: [1 GHz, 2 GHz]}}", 250)), "--dry-run")
    assert "would have 125,000 runs (2 points x 62,500 workloads" in result.err


def test_within_the_limit(cli, tmp_path):
    result = cli("sweep", str(_spec(tmp_path, "{clock: {values: [1 GHz, 2 GHz]}}", 3)), "--dry-run")
    assert result.code == 0 and result.out.startswith("2 points x 9 workloads = 18 runs")
