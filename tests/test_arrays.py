"""unique_rows gives exactly numpy's row-wise unique (same order, same inverse), faster."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.arrays import unique_rows


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_same_as_numpy_unique_along_rows(rows, columns, distinct, seed, floats):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=distinct) if floats else rng.integers(-3, 1000, size=distinct)
    table = values[rng.integers(0, distinct, size=(rows, columns))]
    expected_rows, expected_inverse = np.unique(table, axis=0, return_inverse=True)
    got_rows, got_inverse = unique_rows(table)
    assert np.array_equal(got_rows, expected_rows)
    assert np.array_equal(got_inverse, expected_inverse.reshape(-1))


def test_many_combinations_fall_back_to_numpy():
    rng = np.random.default_rng(0)
    table = rng.integers(0, 2, size=(50, 64))  # 2 distinct values in each of 64 columns: 2^64 combinations
    rows, inverse = unique_rows(table)
    expected_rows, expected_inverse = np.unique(table, axis=0, return_inverse=True)
    assert np.array_equal(rows, expected_rows) and np.array_equal(inverse, expected_inverse.reshape(-1))
