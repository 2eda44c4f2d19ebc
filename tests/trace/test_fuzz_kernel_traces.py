"""Fuzzing kernel trace files: every mutation of a valid trace is refused in one line or
simulated no faster than the trace's analytic lower bound (never below what every
resource's total demand at full capacity takes)."""

import json
from pathlib import Path

from hypothesis import given

from accelsim.arch.model import load_arch
from accelsim.engine.chip import latency_lower_bound_s
from accelsim.trace.kernel import load_trace
from tests.fuzzing import fuzz_settings, mutated, refused_or_ok

ROOT = Path(__file__).resolve().parents[2]
TRACES = [json.loads((ROOT / "traces" / name).read_text())
          for name in ("triton/matmul_512.json", "pallas/rmsnorm_1k.json")]


@fuzz_settings(examples=20)
@given(data=mutated(TRACES[0]) | mutated(TRACES[1]))
def test_a_mutated_kernel_trace(cli, tmp_path, data):
    arch = "h100-sxm" if "triton" in json.dumps(data.get("metadata", "")) else "tpu-v5e"
    _refused_or_no_faster_than_its_bound(cli, tmp_path, data, arch)


def _refused_or_no_faster_than_its_bound(cli, tmp_path, data, arch: str) -> None:
    path = tmp_path / "k.json"
    path.write_text(json.dumps(data))
    result = cli("simulate", "--arch", arch, str(path), "--json")
    if refused_or_ok(result):
        latency = json.loads(result.out)["latency_s"]
        assert latency >= latency_lower_bound_s(load_trace(path), load_arch(arch)) * (1 - 1e-9)


EXECUTION = {"loads": "tma", "consumers": 2, "consumer_chains": "separate", "persistent_ctas": 4,
             "epilogue": "exposed", "next_loads": "after_store"}
"""A Hopper persistent kernel's ``kernel.execution`` (neither seed trace has one), mutated alone."""


@fuzz_settings(examples=15)
@given(execution=mutated(EXECUTION))
def test_a_mutated_execution(cli, tmp_path, execution):
    data = {**TRACES[0], "kernel": {**TRACES[0]["kernel"], "execution": execution}}
    _refused_or_no_faster_than_its_bound(cli, tmp_path, data, "h100-sxm")
