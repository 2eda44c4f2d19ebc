"""An MMA whose A operand is in tensor memory (Blackwell's ``tcgen05.mma`` with A in TMEM) reads
only B from shared memory; a chip without tensor memory refuses it, and only matrix work has it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from accelsim.arch.model import load_arch
from accelsim.engine.programs import _compute_cost
from accelsim.errors import InputError
from accelsim.trace.kernel import Compute

SHAPE = [128, 128, 128]


def mma(**extra) -> Compute:
    return Compute(unit="matrix", flops=2.0 * 128**3, dtype="bf16", shape=SHAPE, **extra)


def test_a_in_tensor_memory_reads_only_b_from_local_memory():
    chip = load_arch("b200")
    seconds, _, from_local, _ = _compute_cost(chip, mma())
    seconds_tmem, _, from_local_tmem, _ = _compute_cost(chip, mma(a_in_tensor_memory=True))
    assert from_local == 2 * 128 * 128 * 2  # A and B, bf16, each once
    assert from_local_tmem == 128 * 128 * 2  # B only
    assert seconds_tmem == seconds  # the tensor cores do the same work


def test_a_chip_without_tensor_memory_refuses_it():
    with pytest.raises(InputError, match="no tensor memory"):
        _compute_cost(load_arch("h100-sxm"), mma(a_in_tensor_memory=True))


def test_only_matrix_work_reads_an_operand_from_tensor_memory():
    with pytest.raises(ValidationError, match="a_in_tensor_memory"):
        Compute(unit="vector", flops=1.0, a_in_tensor_memory=True)
