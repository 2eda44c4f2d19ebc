"""Thread-block clusters in the gemm family: on chips whose L2 can multicast (Hopper's
TMA), pairs of programs share one L2 read of their B tile, which lowers the shared
cache's demand and nothing else; chips without multicast refuse the config."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import split_params

GEMM = get_family("gemm")
TILE = {"block_m": "128", "block_n": "256", "block_k": "64", "num_stages": "3", "num_warps": "8"}


def run(arch: str, cluster: int, m=4096, n=4096, k=4096, overrides=()):
    chip = load_arch(arch, overrides)
    params = split_params(GEMM, {"M": str(m), "N": str(n), "K": str(k), "impl": "triton"})[0]
    config = GEMM.resolve_config(params, {**TILE, "cluster": str(cluster)}, chip)
    trace = GEMM.build(params, config, chip)
    return chip, trace


def test_multicast_halves_what_the_l2_serves_for_b_only():
    chip, single = run("h100-sxm", 1)
    _, paired = run("h100-sxm", 2)
    one, two = program_costs(single, chip), program_costs(paired, chip)
    b_bytes = 4096 * 256 * 2  # a program's B tiles over all of K
    a_bytes = 128 * 4096 * 2
    c_bytes = 128 * 256 * 2
    assert np.allclose(one.cache_bytes, a_bytes + b_bytes + c_bytes)
    assert np.allclose(two.cache_bytes, a_bytes + b_bytes / 2 + c_bytes)
    for field in ("read_bytes", "write_bytes", "local_bytes", "matrix_s"):  # every SM still gets its bytes
        assert np.array_equal(getattr(one, field), getattr(two, field))


def test_a_cluster_is_never_slower_and_helps_where_l2_binds():
    slow_l2 = ["shared_cache.bandwidth=12.2 TB/s"]  # b200's L2 estimate before GB200 was measured
    chip, single = run("b200", 1, 1792, 16128, 3072, slow_l2)
    _, paired = run("b200", 2, 1792, 16128, 3072, slow_l2)
    slow, fast = simulate_kernel(single, chip), simulate_kernel(paired, chip)
    assert slow.bound == "shared_cache"
    assert fast.latency_s < 0.8 * slow.latency_s
    assert fast.utilization["shared_cache"] <= slow.utilization["shared_cache"] + 1e-9


def test_chips_without_multicast_refuse_clusters_and_search_without_them():
    with pytest.raises(InputError, match="cannot multicast a read to 2 programs"):
        run("a100-sxm4-80gb", 2)
    params = split_params(GEMM, {"M": "2048", "N": "2048", "K": "2048", "impl": "triton"})[0]
    assert all("cluster" not in c for c in GEMM.config_space(params, load_arch("a100-sxm4-80gb")))
    assert all(c["cluster"] == 2 for c in GEMM.config_space(params, load_arch("h100-sxm")))
    assert all(c["pair"] == 2 and "cluster" not in c for c in GEMM.config_space(params, load_arch("b200")))


def test_cluster_pairs_need_a_group_they_divide():
    chip = load_arch("h100-sxm")
    params = split_params(GEMM, {"M": "4096", "N": "4096", "K": "4096", "impl": "triton"})[0]
    with pytest.raises(InputError, match="group_m must be a multiple"):
        GEMM.resolve_config(params, {**TILE, "cluster": "2", "group_m": "1"}, chip)
