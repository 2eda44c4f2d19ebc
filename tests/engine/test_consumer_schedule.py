"""How a kernel tells the engine its consumers' schedule: a step may say its MMAs are not
chained (issued asynchronously), vector work may be overlapped (on its pipe, off the
program's dependency chain), and a warp-specialized program's consumers may take turns
(one chain) or overlap one another (one chain each)."""

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import gpu_program_times, instruction_streams
from accelsim.engine.programs import is_chained, program_costs
from accelsim.trace.kernel import Compute, KernelTrace, Step

H100 = load_arch("h100-sxm")
MATRIX = {"unit": "matrix", "flops": 2.0 * 128 * 128 * 128, "dtype": "bf16", "shape": [128, 128, 128]}
SPECIAL = {"unit": "special", "flops": 128.0 * 128}
VECTOR = {"unit": "vector", "flops": 4.0 * 128 * 128}


def trace(*, overlapped=False, chained=None, warps=8, execution=None) -> KernelTrace:
    resources = {"warps": warps}
    step = {"repeat": 16, "transfers": [{"tensor": "K", "block": [], "bytes": 4096}],
            "compute": [MATRIX, SPECIAL, {**VECTOR, "overlapped": overlapped}, MATRIX],
            **({} if chained is None else {"chained": chained})}
    return KernelTrace.model_validate({
        "schema_version": 1, "kernel": {"name": "k", "grid": [1], "resources": resources,
                                        **({"execution": execution} if execution else {})},
        "tensors": {"K": {"shape": [4096], "dtype": "int8"}},
        "templates": [{"name": "t", "steps": [step]}]})


def chain(t: KernelTrace) -> float:
    costs = program_costs(t, H100)
    return float(gpu_program_times(H100, costs, np.zeros(1), 2, instruction_streams(t, H100)).chain[0])


def test_a_step_can_say_its_mmas_are_not_chained():
    assert is_chained(Step(compute=[Compute(**MATRIX), Compute(**SPECIAL), Compute(**MATRIX)]))
    assert not is_chained(Step(chained=False, compute=[Compute(**MATRIX), Compute(**SPECIAL), Compute(**MATRIX)]))
    chip = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false", "matrix_unit.chained_efficiency=0.4", "matrix_unit.efficiency=0.8"])
    assert program_costs(trace(chained=False), chip).matrix_s[0] == pytest.approx(
        program_costs(trace(), chip).matrix_s[0] / 2)


def test_overlapped_vector_work_loads_its_pipe_but_leaves_the_chain():
    plain, shadowed = program_costs(trace(), H100), program_costs(trace(overlapped=True), H100)
    assert shadowed.vector_s[0] == plain.vector_s[0]
    assert shadowed.overlapped_s[0] > 0 and plain.overlapped_s[0] == 0
    assert chain(trace(overlapped=True)) == pytest.approx(chain(trace()) - shadowed.overlapped_s[0] / 2)


def test_consumers_that_take_turns_are_one_chain():
    two = {"consumers": 2}
    assert instruction_streams(trace(warps=12), H100) == 3
    assert instruction_streams(trace(warps=12, execution=two), H100) == 2
    assert instruction_streams(trace(warps=12, execution={**two, "consumer_chains": "shared"}), H100) == 1
    assert chain(trace(warps=12, execution={**two, "consumer_chains": "shared"})) == pytest.approx(
        2 * chain(trace(warps=12, execution=two)))
