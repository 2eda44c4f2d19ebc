"""Kernels that never write one HBM block twice absorb no write in the L2: the shortcut
(no reads ordered) must give what the write-back model gives, and be taken only where
no block is written twice."""

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine import reuse
from accelsim.families import get_family
from accelsim.families.search import split_params

CASES = [
    ("gemm", {"M": "512", "N": "512", "K": "512"}, {}, True),
    # Triton's split-K adds each split's partial into C: one block written four times
    ("gemm", {"M": "512", "N": "384", "K": "4096", "impl": "triton"}, {"split_k": 4}, False),
    # CUTLASS's SplitK mode writes each split's partial to a workspace of its own
    ("gemm", {"M": "512", "N": "384", "K": "4096", "impl": "cutlass"}, {"split_k": 4}, True),
    ("attention", {"batch": "1", "heads": "4", "seq_q": "512", "seq_kv": "512", "head_dim": "64", "pass": "bwd"},
     {}, None),
    ("rmsnorm", {"rows": "1024", "cols": "4096"}, {}, True),
]


@pytest.mark.parametrize(("name", "given", "config", "distinct"), CASES)
def test_shortcut_agrees_with_the_model(monkeypatch, name, given, config, distinct):
    chip = load_arch("h100-sxm")
    family = get_family(name)
    params, _, _ = split_params(family, given)
    trace = family.build(params, family.resolve_config(params, config, chip), chip)
    writes = reuse._accesses(trace, concurrency=264, max_chunks=4, direction="write")
    if distinct is not None:
        assert reuse._all_distinct(writes[0]) is distinct
    fast = reuse.absorbed_write_bytes(trace, concurrency=264, capacity_bytes=50e6)
    monkeypatch.setattr(reuse, "_all_distinct", lambda _ids: False)
    full = reuse.absorbed_write_bytes(trace, concurrency=264, capacity_bytes=50e6)
    np.testing.assert_array_equal(fast, full)
    assert fast.dtype == full.dtype
