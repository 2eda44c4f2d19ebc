"""A GPU SM's special-function units (exp2, rsqrt) are a pipe apart from its FP32 cores: a
program keeps both busy at once, so its vector time is the busier pipe's, while its own
instruction stream still issues both in turn (its chain). A TPU's vector time stays the sum."""

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_program_times, instruction_streams
from accelsim.engine.programs import program_costs
from accelsim.trace.kernel import KernelTrace


def trace(special: float, vector: float) -> KernelTrace:
    return KernelTrace.model_validate({
        "schema_version": 1, "kernel": {"name": "k", "grid": [1], "resources": {"warps": 4}},
        "tensors": {"X": {"shape": [4096], "dtype": "int8"}},
        "templates": [{"name": "t", "steps": [{"repeat": 8, "transfers": [{"tensor": "X", "bytes": 512}], "compute": [
            {"unit": "special", "flops": special}, {"unit": "vector", "flops": vector, "dtype": "fp32"}]}]}]})


def test_exps_and_fp32_work_share_no_pipe_on_a_gpu():
    h100 = load_arch("h100-sxm")
    rate = h100.clock_hz * h100.vector.efficiency
    exps, fp32 = 16.0 * 1000, 256.0 * 500  # 1000 and 500 cycles of work on each pipe
    costs = program_costs(trace(exps, fp32), h100)
    assert costs.vector_s[0] == pytest.approx(8 * 1000 / rate)
    assert costs.issued_vector_s[0] == pytest.approx(8 * 1500 / rate)
    times = gpu_program_times(h100, costs, np.zeros(1), 2, instruction_streams(trace(exps, fp32), h100))
    assert times.chain[0] == pytest.approx(costs.issued_vector_s[0])
    assert times.sm[0] < times.chain[0]


def test_a_tpu_keeps_the_sum():
    v5e = load_arch("tpu-v5e")
    costs = program_costs(trace(1000.0, 1000.0), v5e)
    assert costs.vector_s[0] == costs.issued_vector_s[0]
