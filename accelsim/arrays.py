"""Array helpers the kernel builders share."""

from __future__ import annotations

import numpy as np

_MAX_CODE = 1 << 62


def unique_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(table, axis=0, return_inverse=True)`` (sorted distinct rows, and each
    row's index among them), for a 2-D table with few distinct values per column.

    Each column is ranked separately and the ranks combined into one integer per row
    (mixed radix, first column most significant), so the rows sort in the same order and
    one 1-D unique replaces numpy's row-wise sort, which is slow on large grids."""
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        rows, inverse = np.unique(table, axis=0, return_inverse=True)
        return rows, inverse.reshape(-1)
    codes = np.zeros(table.shape[0], dtype=np.int64)
    radix = 1
    for column in range(table.shape[1]):
        values, ranks = np.unique(table[:, column], return_inverse=True)
        radix *= len(values)
        if radix >= _MAX_CODE:  # too many combinations to code in one integer
            rows, inverse = np.unique(table, axis=0, return_inverse=True)
            return rows, inverse.reshape(-1)
        codes = codes * len(values) + ranks.reshape(-1)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return table[first], inverse.reshape(-1)
