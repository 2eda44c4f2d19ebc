"""Chained matrix work (matmul -> nonlinearity -> matmul in one step) runs at
matrix_unit.chained_efficiency; a GEMM's k-step does not."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import _compute_cost, is_chained
from accelsim.trace.kernel import Compute, Step

MATRIX = {"unit": "matrix", "flops": 2.0 * 128 * 128 * 64, "dtype": "bf16", "shape": [128, 128, 64]}
SPECIAL = {"unit": "special", "flops": 128.0 * 128}
VECTOR = {"unit": "vector", "flops": 4.0 * 128 * 128}


def step(*units: dict) -> Step:
    return Step(compute=[Compute(**u) for u in units])


@pytest.mark.parametrize(("units", "chained"), [
    ((MATRIX,), False),                            # GEMM k-step
    ((MATRIX, VECTOR), False),                     # matmul then an elementwise epilogue
    ((VECTOR,), False),                            # row-wise kernels
    ((MATRIX, SPECIAL, VECTOR, MATRIX), True),     # attention as the family writes it
    ((MATRIX, MATRIX, SPECIAL, VECTOR), True),     # attention as a capture lists it (by unit)
    ((VECTOR, MATRIX), True),                      # matmul of a vector result
])
def test_which_steps_are_chained(units, chained):
    assert is_chained(step(*units)) is chained


def test_chained_efficiency_applies_only_to_chained_steps():
    chip = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false", "matrix_unit.efficiency=0.8", "matrix_unit.chained_efficiency=0.4"])
    matmul = Compute(**MATRIX)
    streamed, chained = _compute_cost(chip, matmul, False)[0], _compute_cost(chip, matmul, True)[0]
    assert chained == pytest.approx(2 * streamed)


def test_chained_efficiency_defaults_to_efficiency():
    chip = load_arch("a100-sxm4-80gb")
    assert chip.matrix.chained_efficiency == chip.matrix.efficiency
