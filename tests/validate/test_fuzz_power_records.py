"""Fuzzing power reading files (``validate --power``): a mutated file is refused in one
line, or each reading is predicted with a finite, positive power (and, for a kernel, an
energy that is that power over its time). The reader and the predictions run in-process."""

import json
import math

from hypothesis import given

from accelsim.validate.power import predict, read_power_records
from tests.fuzzing import fuzz_settings, mutated, read_or_refused

FILE = {"schema_version": 1, "kind": "power_measurements", "description": "fuzzed", "records": [
    {"id": "idle", "arch": "a100-sxm4-80gb", "kind": "idle", "level": "microbenchmark", "average_power_w": 62.1,
     "source": "a test"},
    {"id": "gemm", "arch": "a100-sxm4-80gb", "kind": "kernel", "level": "kernel", "family": "gemm",
     "params": {"M": 256, "N": 256, "K": 256, "dtype": "bf16"}, "latency_s": 2e-5, "average_power_w": 300.0,
     "power_cap_w": 400.0, "source": "a test"},
]}


def test_the_unmutated_file_is_predicted(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(FILE))
    assert [predict(r, "a100-sxm4-80gb").record.id for r in read_power_records([path])] == ["idle", "gemm"]


@fuzz_settings(examples=20)
@given(data=mutated(FILE))
def test_a_mutated_power_file(tmp_path, data):
    predictions = read_or_refused(tmp_path, data,
                                  lambda path: [predict(r, "a100-sxm4-80gb") for r in read_power_records([path])])
    for p in predictions or ():
        assert math.isfinite(p.average_power_w) and p.average_power_w > 0
        if p.energy_j is not None:
            assert p.latency_s > 0 and math.isclose(p.energy_j, p.average_power_w * p.latency_s, rel_tol=1e-6)
