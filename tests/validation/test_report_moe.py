"""validation/report_moe.py: a record's figure and the time it stands for are the same
bytes over the same time, as DeepEP's test scripts count them, and the breakdown it prints is
the simulated result's."""

from __future__ import annotations

import json
import sys

import pytest

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation"))

import report_moe as rm  # noqa: E402

RECORDS = json.loads(rm.RECORDS.read_text(encoding="utf-8"))["records"]


@pytest.mark.parametrize("record", RECORDS, ids=[r["id"] for r in RECORDS])
def test_the_measured_time_gives_back_the_figure(record):
    assert rm.metric(record, rm.measured_s(record)) == pytest.approx(record["value"])


def test_the_normal_kernels_count_what_a_rank_receives_or_the_nodes_a_token_reaches():
    ep8 = next(r for r in RECORDS if r["id"] == "deepep-normal-ep8-dispatch")
    rank_hit, _ = rm.hit_chances(rm.routing_of(ep8), 8, 8)
    assert rm.counted_bytes(ep8) == pytest.approx(4096 * rank_hit * 8 * (7168 + 224))
    ep16 = next(r for r in RECORDS if r["id"] == "deepep-normal-ep16-combine")
    _, node_hit = rm.hit_chances(rm.routing_of(ep16), 16, 8)
    assert rm.counted_bytes(ep16) == pytest.approx(4096 * node_hit * 2 * 7168 * 2)


def test_the_eight_gpu_low_latency_row_stores_over_nvlink_and_the_report_shows_its_parts(tmp_path):
    ep8 = next(r for r in RECORDS if r["id"] == "deepep-ll-ep8-dispatch")
    assert ep8["ep"] not in rm.LOW_LATENCY_RDMA_ONLY_EPS
    result = rm.simulate(ep8)
    assert result.network_bytes_per_rank == 0 and result.nvlink_bytes_per_rank > 0
    text = rm.render([(ep8, result)])
    t = result.times
    parts = (t.fixed_s, t.nvlink_s, t.network_s, t.issue_s, t.receive_s, result.latency_s, 77e-6)
    assert f"| {ep8['id']} | " + " | ".join(f"{s * 1e6:.1f}" for s in parts) + " |" in text
