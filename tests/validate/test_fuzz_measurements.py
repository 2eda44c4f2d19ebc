"""Fuzzing measurement files: a mutated file is refused in one line naming it, or every
record it holds is predicted with a finite error (a time no device takes made it +inf%).
The reader and the comparison run in-process: ``validate`` would also draw its plots."""

import copy
import json
import math
from pathlib import Path

from hypothesis import given

from accelsim.validate.compare import compare, read_measurements
from tests.fuzzing import fuzz_settings, mutated, read_or_refused

ROOT = Path(__file__).resolve().parents[2]
FILE = json.loads((ROOT / "validation" / "reference" / "h100-sxm" / "gemm.json").read_text())
FILE["records"] = [
    {**copy.deepcopy(FILE["records"][0]), "id": "small", "params": {"M": 256, "N": 256, "K": 256, "dtype": "bf16",
                                                                    "batch": 1},
     "config": {"block_m": 64, "block_n": 64, "block_k": 64, "group_m": 8, "split_k": 1, "num_stages": 3,
                "num_warps": 4}},
    # conditions: a lock, and a power limit as GH200's 900 W records have
    {"id": "copy", "family": "copy", "implementation": "x", "params": {"bytes": 1048576}, "latency_s": 3e-6,
     "source": "a test", "conditions": {"clock": "1500 MHz", "power.tdp": "900 W"}},
]


@fuzz_settings(examples=20)
@given(data=mutated(FILE))
def test_a_mutated_measurement_file(tmp_path, data):
    comparisons = read_or_refused(tmp_path, data, lambda path: compare(read_measurements([path])))
    assert all(math.isfinite(c.error) and c.predicted_s > 0 for c in comparisons or ())
