"""The wait-at-first-use what-if (ReplayOptions.wait_at_first_use, replay
--wait-at-first-use): an async collective's done no longer holds its stream; the first op
that uses its result (or orders after it) waits instead, and nothing else changes."""

from __future__ import annotations

import json

import pytest

from accelsim.network import build_topology, simulate_collective
from accelsim.system.first_use import waited_at_first_use
from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import compute, spmd

SIZE = 256 * 2**20
QUIET = ReplayOptions(comm_sm_fraction=0.0, comm_hbm_fraction=0.0)
FIRST_USE = ReplayOptions(comm_sm_fraction=0.0, comm_hbm_fraction=0.0, wait_at_first_use=True)


@pytest.fixture(scope="module")
def ar_alone_s(dgx):
    return simulate_collective(build_topology(dgx), "all-reduce", SIZE).latency_s


def bare_window(user_deps: list[str]) -> list[dict]:
    """An async all-reduce waited for at once (start, then done), then independent work,
    then an op that waits as ``user_deps`` say."""
    return [{"name": "ar", "kind": "all-reduce", "bytes": SIZE, "async": True},
            {"name": "ar-done", "kind": "done", "start": "ar"},
            compute("independent", 1e-3),
            compute("user", 1e-4, deps=user_deps)]


def test_a_bare_window_exposes_the_collective_as_scheduled(dgx, ar_alone_s):
    r = replay(spmd(bare_window(["ar-done"])), dgx, options=QUIET)
    assert r.step_time_s == pytest.approx(ar_alone_s + 1.1e-3, rel=1e-9)


def test_waited_at_first_use_it_runs_beside_the_independent_work(dgx, ar_alone_s):
    assert ar_alone_s < 1e-3  # so it hides behind the independent op
    r = replay(spmd(bare_window(["ar-done"])), dgx, options=FIRST_USE)
    assert r.step_time_s == pytest.approx(1.1e-3, rel=1e-9)
    assert r.summary()["exposed_comm_s"] == 0


def test_the_first_user_still_waits_for_the_result(dgx, ar_alone_s):
    ops = bare_window(["ar-done"])
    ops[2] = compute("independent", 1e-5)  # too short to hide it
    r = replay(spmd(ops), dgx, options=FIRST_USE)
    assert r.step_time_s == pytest.approx(ar_alone_s + 1e-4, rel=1e-9)


def test_an_op_ordered_after_the_done_waits_too(dgx, ar_alone_s):
    ops = bare_window([])
    ops[3]["ctrl_deps"] = ["ar-done"]
    ops[2] = compute("independent", 1e-5)
    r = replay(spmd(ops), dgx, options=FIRST_USE)
    assert r.step_time_s == pytest.approx(ar_alone_s + 1e-4, rel=1e-9)


def test_the_trace_loses_only_its_dones():
    trace = spmd(bare_window(["ar-done", "independent"]))
    moved = waited_at_first_use(trace)
    assert [op.name for op in moved.programs[0].ops] == ["ar", "independent", "user"]
    assert moved.programs[0].ops[2].deps == ["ar", "independent"]
    assert trace.programs[0].ops[3].deps == ["ar-done", "independent"]  # the input is left alone


def test_a_trace_without_dones_is_the_same_trace():
    trace = spmd([compute("a", 1e-3), {"name": "ar", "kind": "all-reduce", "bytes": SIZE}])
    assert waited_at_first_use(trace) is trace


def test_cli_flag(cli, tmp_path, ar_alone_s):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(spmd(bare_window(["ar-done"])).model_dump(exclude_none=True, by_alias=True)))
    steps = []
    for flags in ([], ["--wait-at-first-use"]):
        result = cli("replay", str(path), "--system", "dgx-h100", "--json", *flags)
        assert result.code == 0, result.err
        steps.append(json.loads(result.out)["step_time_s"])
    assert steps[1] < steps[0]
