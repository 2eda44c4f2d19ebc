"""validation/report_multinode.py: every published multi-node record has a source and is
compared on the measured machine; bus bandwidth follows nccl-tests' definition."""

from __future__ import annotations

import json
import sys

import pytest

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation"))

import report_multinode as rm  # noqa: E402

RECORDS = json.loads(rm.RECORDS.read_text(encoding="utf-8"))["records"]


def test_every_record_cites_its_source_and_only_cloud_fabrics_are_fitted():
    assert len(RECORDS) >= 20
    for r in RECORDS:
        assert r["source"] and (r["fit"] is False or r["system"] in ("gcp-a3-mega", "aws-p6-b200"))
        assert r["ranks"] > 8  # more than one node's GPUs


def test_bus_bandwidth_from_the_faster_time_column():
    r = {"collective": "all-reduce", "ranks": 16, "size_bytes": 2**30, "time_out_of_place_us": 4000.0,
         "time_in_place_us": 5000.0}
    assert rm.measured_busbw(r) == pytest.approx(2**30 * 2 * 15 / 16 / 4e-3)


def test_a_ring_record_is_predicted_on_the_measured_machine():
    ring = [r for r in RECORDS if r["algorithm"] == "ring" and r["system"] == "h100-ib-cluster"]
    row = rm.compare(ring)[0]
    assert row["ran"].startswith("ring") and abs(row["error"]) < 0.1  # an NVIDIA maintainer's ~396 GB/s


def test_sizes_below_a_kibibyte_print_in_bytes():
    assert [rm._size(n) for n in (8, 512, 2048, 3 * 2**20, 2**33)] == ["8 B", "512 B", "2 KiB", "3 MiB", "8 GiB"]
