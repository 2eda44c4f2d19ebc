"""The TPU Pallas pipeline rule: a block is copied in when its index changes, written
back before it changes, and a new kernel (``kernel_starts``) copies and writes anew."""

from __future__ import annotations

import numpy as np

from accelsim.families.pallas_rule import Operand, copy_flags


def test_reads_copy_on_a_change_writes_before_one():
    index = (np.array([0, 0, 1, 1, 1]),)
    read = copy_flags(Operand("X", "read", index, np.ones(5)))
    write = copy_flags(Operand("Y", "write", index, np.ones(5)))
    assert read.tolist() == [True, False, True, False, False]
    assert write.tolist() == [False, True, False, False, True]


def test_a_kernel_start_copies_and_writes_even_when_the_index_stays():
    index = (np.array([0, 0, 0, 0]),)
    starts = np.array([True, False, True, False])
    assert copy_flags(Operand("X", "read", index, np.ones(4)), starts).tolist() == [True, False, True, False]
    assert copy_flags(Operand("Y", "write", index, np.ones(4)), starts).tolist() == [False, True, False, True]
    # without the starts, one block stays resident through all four steps
    assert copy_flags(Operand("X", "read", index, np.ones(4))).tolist() == [True, False, False, False]
