"""The reuse model's one-column sort keys order and equate rows as the rows themselves do,
whichever encoding (value ranges, dense ranks, lexicographic ranks) the ranges allow."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.engine.reuse import _single_key

BOUNDS = st.sampled_from([(-1, 3), (0, 1000), (-(2**40), 2**40), (-(2**62), 2**62)])


@st.composite
def columns(draw):
    rows = draw(st.integers(1, 40))
    out = []
    for _ in range(draw(st.integers(1, 5))):
        low, high = draw(BOUNDS)
        out.append(np.array(draw(st.lists(st.integers(low, high), min_size=rows, max_size=rows)), dtype=np.int64))
    return out


@settings(max_examples=200, deadline=None)
@given(columns())
def test_key_sorts_and_equates_like_the_rows(cols):
    key = _single_key(cols)
    rows = list(zip(*(c.tolist() for c in cols)))
    assert [rows[i] for i in np.argsort(key, kind="stable")] == sorted(rows)
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (key[i] == key[j]) == (rows[i] == rows[j])
