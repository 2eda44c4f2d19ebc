"""Fuzzing ``explore --space`` files: a mutated grid or config list is refused in one
line, quickly, or ranked fastest first with every ranked latency finite and positive."""

import json
import math
import time

import yaml
from hypothesis import given

from tests.fuzzing import fuzz_settings, mutated, refused_or_ok

GEMM = ("--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=256", "--param", "N=256", "--param", "K=256")
GRID = {"grid": {"block_m": [64, 128], "block_n": [64, 128], "num_stages": [3, 4], "num_warps": [4, 8]}}
CONFIGS = {"configs": [{"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 4},
                       {"block_m": 64, "block_n": 256, "block_k": 32, "split_k": 2}]}


@fuzz_settings(examples=20)
@given(data=mutated(GRID) | mutated(CONFIGS))
def test_a_mutated_space(cli, tmp_path, data):
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    started = time.perf_counter()
    result = cli("explore", *GEMM, "--space", str(path), "--top", "3", "--json")
    assert time.perf_counter() - started < 20
    if refused_or_ok(result):
        latencies = [row["latency_s"] for row in json.loads(result.out)["ranking"] if row.get("latency_s") is not None]
        assert all(math.isfinite(t) and t > 0 for t in latencies) and latencies == sorted(latencies)
