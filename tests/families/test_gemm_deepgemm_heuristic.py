"""``impl=deepgemm`` runs the config DeepGEMM's own ``get_best_configs`` picks (its
``deep_gemm/jit_kernels/gemm.py`` at 327ec92f, the commit the H100 records quote). The
expected tuples below are that function's outputs on 132 SMs, taken by running it, not
from accelsim: (persistent CTAs, block_m, block_n, stages, (multicast, on A)). They cover
each of its branches: a 64-row tile with one consumer, the (4, 3) stage choices of a block_n
that does not divide 128, multicast on A and on B, the masked layout (no multicast on B, and
none below 512 expected rows) and the contiguous layout's 128-row tiles."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.gemm_impls import deepgemm
from accelsim.families.search import split_params

GEMM = get_family("gemm")

CASES = [
    # (M, N, K, groups, layout), DeepGEMM's choice
    ((64, 2112, 7168, 1, "contiguous"), (132, 64, 16, 8, (1, True))),
    ((128, 24576, 1536, 1, "contiguous"), (128, 128, 96, 4, (1, True))),
    ((4096, 2112, 7168, 1, "contiguous"), (128, 256, 88, 4, (2, True))),
    ((4096, 7168, 16384, 1, "contiguous"), (128, 256, 128, 3, (2, True))),
    ((512, 1024, 2048, 1, "contiguous"), (128, 64, 64, 8, (2, False))),
    ((2048, 7168, 2048, 4, "masked"), (128, 256, 112, 3, (2, True))),
    ((1024, 4096, 7168, 4, "masked"), (128, 256, 128, 3, (1, True))),
    ((32768, 4096, 7168, 4, "contiguous"), (131, 128, 160, 4, (1, True))),
]


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm").for_family("gemm")


@pytest.mark.parametrize(("shape", "expected"), CASES)
def test_the_config_is_deepgemms_own_choice(h100, shape, expected):
    m, n, k, groups, layout = shape
    params = split_params(GEMM, {"M": str(m), "N": str(n), "K": str(k), "dtype": "fp8", "groups": str(groups),
                                 "layout": layout, "impl": "deepgemm"})[0]
    config = deepgemm.deepgemm_config(params, h100)
    multicast = (config["cluster"], config.get("multicast", "A") == "A")
    got = (config["persistent_ctas"], config["block_m"], config["block_n"], config["num_stages"], multicast)
    assert got == expected
