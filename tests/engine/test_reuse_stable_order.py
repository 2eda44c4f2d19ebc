"""engine.reuse.stable_order is numpy's stable argsort, exactly: ties keep their positions,
with narrow keys (the fast path) and keys too wide to number (the fallback)."""

import numpy as np
import pytest

from accelsim.engine.reuse import stable_order


@pytest.mark.parametrize("span", [1, 7, 1000, 2**40, 2**62])
def test_stable_order_is_the_stable_argsort(span):
    rng = np.random.default_rng(span % 1000)
    key = rng.integers(-span // 2, span - span // 2, size=5000, dtype=np.int64)
    key[::3] = key[0]  # many ties
    assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))


def test_stable_order_of_nothing_and_of_one():
    assert stable_order(np.zeros(0, dtype=np.int64)).size == 0
    assert stable_order(np.array([5], dtype=np.int64)).tolist() == [0]
