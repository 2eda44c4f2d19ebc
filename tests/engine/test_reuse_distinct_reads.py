"""Kernels that never read one HBM block twice skip the reuse model: the shortcut must
give what the model gives, and be taken only where it holds."""

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine import reuse
from accelsim.families import get_family
from accelsim.families.search import split_params

CASES = [
    ("elementwise", {"elements": "1048576", "dtype": "bf16", "inputs": "2", "outputs": "1"}, True),
    ("elementwise", {"elements": "1000003", "dtype": "fp32", "inputs": "1", "outputs": "1"}, True),
    ("gemm", {"M": "512", "N": "512", "K": "512"}, False),
    ("rmsnorm", {"rows": "1024", "cols": "4096"}, False),
    ("attention", {"batch": "1", "heads": "4", "seq_q": "512", "seq_kv": "512", "head_dim": "64"}, False),
]


@pytest.mark.parametrize(("name", "given", "distinct"), CASES)
def test_shortcut_agrees_with_the_model(monkeypatch, name, given, distinct):
    chip = load_arch("h100-sxm")
    family = get_family(name)
    params, _, _ = split_params(family, given)
    trace = family.build(params, family.resolve_config(params, {}, chip), chip)
    assert reuse._every_block_distinct(trace) is distinct
    fast = reuse.cache_hit_bytes(trace, concurrency=264, capacity_bytes=50e6)
    monkeypatch.setattr(reuse, "_every_block_distinct", lambda _trace, _direction="read": False)
    full = reuse.cache_hit_bytes(trace, concurrency=264, capacity_bytes=50e6)
    np.testing.assert_array_equal(fast, full)
