"""Fuzzing sweep specs: a mutated spec is refused in one line before anything runs, or
checked (``--dry-run``) into at most 100,000 runs, quickly."""

import re
import time
from pathlib import Path

import yaml
from hypothesis import given

from accelsim.study.spec import MAX_RUNS
from tests.fuzzing import fuzz_settings, mutated, refused_or_ok

ROOT = Path(__file__).resolve().parents[2]
SPEC = {
    "name": "fuzz",
    "base": "h100-sxm",
    "parameters": {
        "hbm.bandwidth": {"values": ["2 TB/s", "3.35 TB/s"]},
        "clock": {"range": {"start": "1.2 GHz", "stop": "1.8 GHz", "num": 3}},
    },
    "sampling": "grid",
    "workloads": [
        {"kernel": "gemm", "params": {"M": "$m", "N": 1024, "K": 1024}, "vars": {"m": [256, 512]}},
        {"trace": str(ROOT / "traces" / "triton" / "matmul_512.json"), "name": "mm"},
        {"sequence": [{"kernel": "rmsnorm", "params": {"rows": 64, "cols": 1024}, "count": 2}],
         "memory": [{"bytes": "1 MiB"}]},
    ],
    "metrics": ["latency_s", "achieved_flops_per_s"],
    "pareto": {"x": "hbm.bandwidth", "y": "latency_s"},
}


@fuzz_settings(examples=20)
@given(data=mutated(SPEC))
def test_a_mutated_sweep_spec(cli, tmp_path, data):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    started = time.perf_counter()
    result = cli("sweep", str(path), "--dry-run", "-o", str(tmp_path / "out"))
    assert time.perf_counter() - started < 20
    if refused_or_ok(result):
        runs = int(re.match(r"\d+ points x \d+ workloads = (\d+) runs", result.out).group(1))
        assert 1 <= runs <= MAX_RUNS
    assert not (tmp_path / "out").exists()
