"""Fuzzing ``simulate --moe nccl --traffic FILE``: a mutated traffic matrix is refused in
one line, or simulated no faster than its busiest rank's bytes take over its NVLink port."""

import json
import math

import pytest
from hypothesis import given

from accelsim.arch.model import load_arch
from accelsim.network import build_topology
from tests.fuzzing import fuzz_settings, mutated, refused_or_ok

MATRIX = {"bytes": [[0 if i == j else 1e6 * (1 + (i * j) % 3) for j in range(8)] for i in range(8)]}
MOE = ("simulate", "--system", "dgx-h100", "--moe", "nccl", "--json")


@pytest.fixture(scope="module")
def egress_bytes_per_s() -> float:
    return build_topology(load_arch("dgx-h100")).links["gpu0->switch"].bandwidth_bytes_per_s


@fuzz_settings(examples=25)
@given(data=mutated(MATRIX))
def test_a_mutated_traffic_matrix(cli, tmp_path, egress_bytes_per_s, data):
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps(data))
    result = cli(*MOE, "--traffic", str(path))
    if refused_or_ok(result):
        r = json.loads(result.out)
        assert math.isfinite(r["latency_s"]) and r["latency_s"] > 0
        assert r["nvlink_bytes_per_rank"] / egress_bytes_per_s <= r["latency_s"] * (1 + 1e-9)


def test_a_byte_count_past_a_float_s_range_is_one_line(cli, tmp_path):
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps({"bytes": [[10**400 if i == 0 and j == 1 else 0 for j in range(8)] for i in range(8)]}))
    result = cli(*MOE, "--traffic", str(path))
    assert result.code == 2 and "traffic.json: bytes[0]" in result.err and "\n" not in result.err.strip()


def test_a_byte_count_past_a_tebibyte_is_one_line(cli, tmp_path):
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps({"bytes": [[1e300 if i == 1 and j == 0 else 0 for j in range(8)] for i in range(8)]}))
    result = cli(*MOE, "--traffic", str(path))
    assert result.code == 2 and "traffic.json: bytes[1]" in result.err
