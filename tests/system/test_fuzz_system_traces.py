"""Fuzzing system traces: every mutation of a valid trace is refused in one line, or
replayed to a step no shorter than its longest measured compute op and than the compute
it reports, with every time finite and not negative."""

import json
import math

from hypothesis import given

from tests.fuzzing import fuzz_settings, mutated, refused_or_ok

GOOD = {
    "schema_version": 1, "num_devices": 8,
    "programs": [{"name": "spmd", "devices": ["0-7"], "ops": [
        {"name": "a", "kind": "compute", "flops": 1e12, "bytes": 1e9},
        {"name": "ar", "kind": "all-reduce", "bytes": 1e8, "deps": ["a"], "async": True},
        {"name": "b", "kind": "compute", "duration_s": 1e-3, "stream": "side"},
        {"name": "d", "kind": "done", "start": "ar"},
        {"name": "g", "kind": "all-gather", "bytes": 65536, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]]},
        {"name": "perm", "kind": "collective-permute", "bytes": 1024, "pairs": [[0, 1], [1, 0]]},
    ]}],
}
HOSTED = {
    "schema_version": 1, "num_devices": 8,
    "programs": [{"name": "spmd", "devices": ["0-7"], "ops": [
        {"name": "a", "kind": "compute", "flops": 1e12, "bytes": 1e9, "host_s": 8e-6},
        {"name": "ar", "kind": "all-reduce", "bytes": 1e8, "deps": ["a"], "async": True, "host_s": 2e-6},
        {"name": "b", "kind": "compute", "duration_s": 1e-3, "stream": "side", "host_s": 1e-6, "host_sync": True},
        {"name": "d", "kind": "done", "start": "ar"},
        {"name": "c", "kind": "compute", "duration_s": 1e-4, "host_s": 3e-6},
    ]}],
}
"""A host timeline (``host_s``, ``host_sync``): issue order, a sync draining the queue."""


@fuzz_settings(examples=30)
@given(data=mutated(GOOD) | mutated(HOSTED))
def test_a_mutated_system_trace(cli, tmp_path, data):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    result = cli("replay", str(path), "--system", "dgx-h100", "--json")
    if refused_or_ok(result):
        out = json.loads(result.out)
        times = [out[k] for k in ("step_time_s", "compute_s", "comm_s", "exposed_comm_s", "idle_s")]
        assert all(math.isfinite(t) and t >= 0 for t in times)
        durations = [op.get("duration_s", 0) for p in data["programs"] for op in p["ops"]
                     if isinstance(op.get("duration_s"), (int, float))]
        assert out["step_time_s"] >= max([out["compute_s"], *durations]) * (1 - 1e-9)
