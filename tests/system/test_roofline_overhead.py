"""A fixed cost per roofline op (--roofline-overhead): added to every roofline compute op,
and only to those; bad values are one-line errors."""

from __future__ import annotations

import json

import pytest

from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import spmd

CHAIN = [{"name": f"f{i}", "kind": "compute", "flops": 1e9, "bytes": 1e6} for i in range(10)]


def test_each_roofline_op_pays_the_overhead_once(dgx):
    plain = replay(spmd(CHAIN), dgx).step_time_s
    eager = replay(spmd(CHAIN), dgx, options=ReplayOptions(roofline_overhead_s=2e-6)).step_time_s
    assert eager - plain == pytest.approx(10 * 2e-6, rel=1e-6)


def test_measured_and_family_ops_are_left_alone(dgx):
    ops = [{"name": "m", "kind": "compute", "duration_s": 5e-6},
           {"name": "g", "kind": "compute", "family": "gemm", "params": {"M": 1024, "N": 1024, "K": 1024}}]
    plain = replay(spmd(ops), dgx).step_time_s
    assert replay(spmd(ops), dgx, options=ReplayOptions(roofline_overhead_s=2e-6)).step_time_s == plain


def test_cli_takes_a_time_with_its_unit(cli, tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(spmd(CHAIN).model_dump(exclude_none=True)))
    times = []
    for overhead in ("0 us", "3 us"):
        result = cli("replay", str(trace), "--system", "dgx-h100", "--roofline-overhead", overhead, "--json")
        assert result.code == 0, result.err
        times.append(json.loads(result.out)["step_time_s"])
    assert times[1] - times[0] == pytest.approx(30e-6, rel=1e-6)


@pytest.mark.parametrize("bad", ["3", "-1 us", "3 GB"])
def test_bad_overheads_are_one_line(cli, tmp_path, bad):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(spmd(CHAIN).model_dump(exclude_none=True)))
    result = cli("replay", str(trace), "--system", "dgx-h100", "--roofline-overhead", bad)
    assert result.code == 2
    assert "--roofline-overhead" in result.err and len(result.err.strip().splitlines()) == 1
