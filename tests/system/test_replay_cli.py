"""``accelsim replay``: stable --json keys, a Perfetto timeline, one-line errors."""

from __future__ import annotations

import json

import pytest

TRACE = {
    "schema_version": 1, "num_devices": 8, "name": "tiny step",
    "programs": [{"name": "spmd", "devices": ["0-7"], "ops": [
        {"name": "fwd", "kind": "compute", "flops": 2e12, "bytes": 4e9},
        {"name": "grads", "kind": "all-reduce", "bytes": 268435456, "deps": ["fwd"], "async": True},
        {"name": "bwd", "kind": "compute", "family": "gemm", "params": {"M": 2048, "N": 2048, "K": 2048}},
        {"name": "grads.done", "kind": "done", "start": "grads"},
    ]}],
}


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "step.json"
    path.write_text(json.dumps(TRACE))
    return path


def test_json_keys_are_stable(cli, trace_file):
    result = cli("replay", str(trace_file), "--system", "dgx-h100", "--json")
    assert result.code == 0, result.err
    out = json.loads(result.out)
    for key in ("step_time_s", "exposed_comm_s", "overlapped_comm_s", "devices", "links", "sim_wall_s", "events"):
        assert key in out
    assert len(out["devices"]) == 8 and out["devices"][3]["device"] == 3
    assert out["step_time_s"] >= out["devices"][0]["compute_s"] > 0
    assert out["links"][0]["utilization"] > 0


def test_text_output_and_timeline(cli, trace_file, tmp_path):
    timeline = tmp_path / "tl.json"
    result = cli("replay", str(trace_file), "--system", "dgx-h100", "--timeline", str(timeline))
    assert result.code == 0, result.err
    assert "step time" in result.out and "exposed" in result.out
    events = json.loads(timeline.read_text())["traceEvents"]
    names = {e.get("name") for e in events if e["ph"] == "X"}
    assert {"fwd", "bwd", "grads.done"} <= names
    assert any(e["ph"] == "C" for e in events)


def test_set_overrides_reach_the_replay(cli, trace_file):
    base = json.loads(cli("replay", str(trace_file), "--system", "dgx-h100", "--json").out)
    slow = json.loads(cli("replay", str(trace_file), "--system", "dgx-h100", "--json",
                          "--set", "chip.hbm.bandwidth=1 TB/s").out)
    assert slow["step_time_s"] > base["step_time_s"]


def test_bad_trace_is_one_line_and_exit_2(cli, tmp_path):
    bad = dict(TRACE, programs=[dict(TRACE["programs"][0], ops=[{"name": "x", "kind": "matmul"}])])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    result = cli("replay", str(path), "--system", "dgx-h100")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "programs[0].ops[0].kind: unknown op kind 'matmul'" in result.err


def test_a_trace_bigger_than_the_system_is_refused(cli, tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(dict(TRACE, num_devices=16)))
    result = cli("replay", str(path), "--system", "dgx-h100")
    assert result.code == 2 and "num_devices: the trace has 16 devices; 'dgx-h100-calibrated' has 8" in result.err


@pytest.mark.parametrize("collectives", [True, False])
def test_an_unknown_protocol_is_the_options_fault_with_or_without_collectives(cli, tmp_path, collectives):
    ops = TRACE["programs"][0]["ops"] if collectives else TRACE["programs"][0]["ops"][:1]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**TRACE, "programs": [{**TRACE["programs"][0], "ops": ops}]}))
    result = cli("replay", str(path), "--system", "dgx-h100", "--algorithm", "ring/bogus")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith("accelsim: error: --algorithm: unknown protocol 'bogus'")
