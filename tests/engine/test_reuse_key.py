"""Configs with one reuse key (engine.gpu.reuse_key) have the same shared-cache hits, as
config=auto's search takes for granted when it computes them once per key."""

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.gpu import reuse_key, shared_cache_hits
from accelsim.families import get_family
from accelsim.families.search import fitting_space, split_params

CASES = [
    ("a100-sxm4-40gb", "gemm", {"M": "2048", "N": "2048", "K": "2048"}),
    ("h100-sxm", "gemm", {"M": "1024", "N": "2048", "K": "1024"}),
    ("a100-sxm4-80gb", "gemm", {"M": "512", "N": "512", "K": "512", "dtype": "fp32"}),
]


@pytest.mark.parametrize(("arch", "family_name", "given"), CASES)
def test_configs_sharing_a_key_share_their_hits(arch, family_name, given):
    family = get_family(family_name)
    chip = load_arch(arch).for_family(family_name)
    params, _, _ = split_params(family, given)
    by_key: dict[str, list[np.ndarray]] = {}
    for config in fitting_space(family, params, chip):
        trace = family.build(params, config, chip)
        by_key.setdefault(reuse_key(trace, chip), []).append(shared_cache_hits(trace, chip))
    assert any(len(hits) > 1 for hits in by_key.values())  # the key does merge configs
    for hits in by_key.values():
        for other in hits[1:]:
            np.testing.assert_array_equal(other, hits[0])
