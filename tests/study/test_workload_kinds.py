"""Collectives, sequences and system traces as sweep workloads, on a system base."""

from __future__ import annotations

import csv

import pytest

from accelsim.errors import InputError
from accelsim.study.plan import plan_sweep
from accelsim.study.sweep import run_sweep
from tests import conftest

STEP = conftest.REPO / "traces" / "system" / "transformer_step_dp2_tp4.json"


def _rows(tmp_path, spec_file, text):
    run_sweep(plan_sweep(spec_file(text)), tmp_path / "out", progress=False)
    return list(csv.DictReader((tmp_path / "out" / "results.csv").open()))


def test_collective_and_system_trace_on_a_node_with_chip_overrides(spec_file, tmp_path):
    rows = _rows(tmp_path, spec_file, f"""\
        base: dgx-h100
        parameters:
          chip.interconnect.bandwidth_per_link: {{values: ["25 GB/s", "50 GB/s"]}}
        workloads:
          - {{collective: all-gather, bytes: 256 MiB, algorithm: ring}}
          - {{system_trace: {STEP}}}
        metrics: [latency_s, busbw_bytes_per_s, comm_s]
        """)
    assert [r["status"] for r in rows] == ["ok"] * 4, [r["error"] for r in rows]
    gather = [float(r["latency_s"]) for r in rows[0::2]]
    assert 1.8 < gather[0] / gather[1] < 2.01  # twice the link bandwidth, about half the time
    assert rows[0]["busbw_bytes_per_s"] and rows[1]["busbw_bytes_per_s"] == ""
    step = [float(r["latency_s"]) for r in rows[1::2]]
    assert step[1] <= step[0] and float(rows[1]["comm_s"]) > 0
    assert rows[1]["bound"] in ("compute", "network")


def test_sequence_adds_up_and_checks_its_footprint(spec_file, tmp_path):
    rows = _rows(tmp_path, spec_file, """\
        base: h100-sxm
        parameters:
          hbm.capacity: {values: ["16 GB", "80 GB"]}
        workloads:
          - kernel: copy
            params: {bytes: 1048576}
          - name: two copies
            vars: {n: [1, 4]}
            sequence:
              - {kernel: copy, params: {bytes: 1048576}, count: 2}
            memory:
              - {bytes: "10 GB", per: [n]}
        metrics: [latency_s, memory_bytes, fits, kernel_s]
        """)
    one = float(rows[0]["latency_s"])
    assert float(rows[1]["latency_s"]) == 2 * one == float(rows[1]["kernel_s"])
    assert [r["fits"] for r in rows] == ["", "true", "false", "", "true", "true"]
    assert float(rows[2]["memory_bytes"]) == 40e9
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| two copies | 16 GB | n | 1 | 4 |" in summary
    assert "| two copies | 80 GB | n | 4 | - |" in summary


def test_system_trace_roofline_overhead(spec_file, tmp_path):
    rows = _rows(tmp_path, spec_file, f"""\
        base: dgx-h100
        workloads:
          - {{system_trace: {STEP}}}
          - {{system_trace: {STEP}, roofline_overhead: "2 us", name: eager}}
        metrics: [latency_s, compute_s]
        """)
    assert [r["status"] for r in rows] == ["ok"] * 2, [r["error"] for r in rows]
    assert float(rows[1]["compute_s"]) > float(rows[0]["compute_s"])


def test_a_bad_roofline_overhead_is_located(spec_file):
    path = spec_file(f"""\
        base: dgx-h100
        workloads:
          - {{system_trace: {STEP}, roofline_overhead: "2 GB"}}
        """)
    with pytest.raises(InputError) as caught:
        plan_sweep(path)
    line = caught.value.one_line()
    assert str(path) in line and "roofline_overhead" in line and "a time" in line


def test_a_kernel_of_several_kernels_resumes(spec_file, tmp_path):
    """A split-KV decode is two kernels: its per-kernel times (a list in simulate's summary)
    went into the journal, which then refused to be read back ("expected a number")."""
    text = """\
        base: h100-sxm
        parameters:
          power.dvfs.boost.clock: {values: ["1.5 GHz", "1.83 GHz"]}
        workloads:
          - kernel: attention
            params: {batch: 1, heads: 32, kv_heads: 4, seq_q: 1, seq_kv: 32768, split_kv: 32}
        metrics: [latency_s]
        """
    first = _rows(tmp_path, spec_file, text)
    again = _rows(tmp_path, spec_file, text)  # resumes from the journal
    assert [r["status"] for r in again] == ["ok", "ok"] and again == first
