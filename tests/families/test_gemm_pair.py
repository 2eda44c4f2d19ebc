"""Blackwell's 2-SM MMA in the gemm family (``pair=2``): consecutive programs down M split
their B tile, so each loads, stages and feeds its MMA half of B; the L2 serves B once per
pair, as a multicast cluster's would. Chips without it refuse the config, and a trace
asking for more than the chip's pair is refused by the engine."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import split_params
from accelsim.trace.kernel import KernelTrace

GEMM = get_family("gemm")
TILE = {"block_m": "128", "block_n": "256", "block_k": "64", "num_stages": "3", "num_warps": "8"}


def build(arch: str, extra: dict, m=4096, n=4096, k=4096):
    chip = load_arch(arch)
    params = split_params(GEMM, {"M": str(m), "N": str(n), "K": str(k)})[0]
    config = GEMM.resolve_config(params, {**TILE, **extra}, chip)
    return chip, config, GEMM.build(params, config, chip)


def test_a_pair_moves_half_of_b_through_each_sm():
    chip, _, single = build("b200", {})
    _, multicast_config, multicast = build("b200", {"cluster": "2"})
    _, pair_config, paired = build("b200", {"pair": "2"})
    one, two, cast = program_costs(single, chip), program_costs(paired, chip), program_costs(multicast, chip)
    a_bytes, b_bytes, c_bytes = 128 * 4096 * 2, 4096 * 256 * 2, 128 * 256 * 2
    assert np.allclose(one.read_bytes, a_bytes + b_bytes)
    assert np.allclose(two.read_bytes, a_bytes + b_bytes / 2)  # through the SM's port
    assert np.allclose(two.cache_bytes, cast.cache_bytes)  # the L2 serves B once per pair either way
    # shared memory: the fill and the MMA's operand reads each carry half of B
    assert np.allclose(one.local_bytes - two.local_bytes, 2 * b_bytes / 2)
    assert np.array_equal(one.matrix_s, two.matrix_s) and np.array_equal(one.flops, two.flops)
    assert paired.kernel.resources.local_memory_bytes == (128 * 64 + 64 * 128) * 2 * 3


def test_the_pair_halves_are_different_blocks():
    """The two programs of a pair read different halves of B: first reads miss, so HBM
    still brings in all of B (a pair's second half is no hit)."""
    chip, _, single = build("b200", {}, m=256, n=256, k=4096)
    _, _, paired = build("b200", {"pair": "2"}, m=256, n=256, k=4096)
    s, p = simulate_kernel(single, chip), simulate_kernel(paired, chip)
    assert p.hbm_bytes == pytest.approx(s.hbm_bytes, rel=1e-9)


def test_an_odd_last_row_of_tiles_loads_all_of_b():
    chip, _, paired = build("b200", {"pair": "2", "split_k": "1"}, m=3 * 128, n=256, k=1024)
    costs = program_costs(paired, chip)
    b_full = 1024 * 256 * 2
    pid_m = np.asarray(paired.program_vars["pid_m"])
    assert np.allclose(costs.read_bytes[pid_m < 2], 128 * 1024 * 2 + b_full / 2)
    assert np.allclose(costs.read_bytes[pid_m == 2], 128 * 1024 * 2 + b_full)


def test_pair_beats_a_multicast_cluster_where_the_port_binds():
    chip, _, multicast = build("b200", {"cluster": "2"}, 1792, 16128, 3072)
    _, _, paired = build("b200", {"pair": "2"}, 1792, 16128, 3072)
    slow, fast = simulate_kernel(multicast, chip), simulate_kernel(paired, chip)
    assert slow.bound in ("port", "local_memory")
    assert fast.latency_s < 0.9 * slow.latency_s


@pytest.mark.parametrize(("arch", "extra", "message"), [
    ("h100-sxm", {"pair": "2"}, "cannot span one MMA over 2 programs"),
    ("b200", {"pair": "2", "cluster": "2"}, "give one of them"),
    ("b200", {"pair": "2", "group_m": "1"}, "group_m must be a multiple"),
    ("b200", {"pair": "0"}, "expected an integer >= 1"),
])
def test_bad_pairs_are_refused(arch, extra, message):
    with pytest.raises(InputError, match=message):
        build(arch, extra)


def test_fp32_gemms_have_no_mma_to_pair():
    chip = load_arch("b200")
    params = split_params(GEMM, {"M": "1024", "N": "1024", "K": "1024", "dtype": "fp32"})[0]
    with pytest.raises(InputError, match="no MMA to pair"):
        GEMM.resolve_config(params, {**TILE, "block_n": "128", "pair": "2"}, chip)
    assert all("pair" not in c for c in GEMM.config_space(params, chip))


def test_the_engine_refuses_a_pair_the_chip_lacks():
    _, _, paired = build("b200", {"pair": "2"}, m=256, n=256, k=256)
    trace = KernelTrace.model_validate(paired.model_dump())
    with pytest.raises(InputError, match="matrix_unit.pair is 1"):
        simulate_kernel(trace, load_arch("h100-sxm"))
