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
from accelsim.trace.kernel import KernelTrace, check_blocks

GEMM = get_family("gemm")
TILE = {"block_m": "128", "block_n": "256", "block_k": "64", "num_stages": "3", "num_warps": "8"}


def build(arch: str, extra: dict, m=4096, n=4096, k=4096):
    chip = load_arch(arch)
    params = split_params(GEMM, {"M": str(m), "N": str(n), "K": str(k), "impl": "triton"})[0]
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


def test_an_odd_last_row_of_tiles_gets_a_padding_partner():
    """As the kernels launch it: the last row's partner loads its half of B and runs a
    masked MMA (no useful flops), reads no A and stores nothing."""
    chip, _, paired = build("b200", {"pair": "2", "split_k": "1"}, m=3 * 128, n=256, k=1024)
    check_blocks(paired)
    costs = program_costs(paired, chip)
    a_bytes, b_half = 128 * 1024 * 2, 1024 * 256 * 2 / 2
    pid_m = np.asarray(paired.program_vars["pid_m"])
    assert sorted(set(pid_m.tolist())) == [0, 1, 2, 3]
    assert np.allclose(costs.read_bytes[pid_m < 3], a_bytes + b_half)
    assert np.allclose(costs.read_bytes[pid_m == 3], b_half)
    assert np.allclose(costs.write_bytes[pid_m == 3], 0) and np.allclose(costs.flops[pid_m == 3], 0)
    assert np.allclose(costs.matrix_s[pid_m == 3], costs.matrix_s[pid_m == 0])  # the pair's MMA runs whole
    assert costs.flops.sum() == pytest.approx(2 * 384 * 256 * 1024)


def test_odd_rows_move_what_unpaired_programs_move_through_hbm():
    """Each half of B is its own block, so the padding partner's half and its pair's are
    read once each; a pair never costs more HBM traffic than no pair (odd rows included)."""
    chip, _, single = build("b200", {"split_k": "1"}, m=384, n=131072, k=1024)
    _, _, paired = build("b200", {"pair": "2", "split_k": "1"}, m=384, n=131072, k=1024)
    s, p = simulate_kernel(single, chip), simulate_kernel(paired, chip)
    # within the reuse window's effect (it follows occupancy, which the halved B changes);
    # B blocks that collided once made it 52% more
    assert p.hbm_bytes == pytest.approx(s.hbm_bytes, rel=0.02)


def test_odd_rows_search_unpaired_clusters_too():
    """The padding row's tensor work is wasted, so with odd tile rows the search also
    tries the unpaired multicast cluster; with even rows only pairs."""
    chip = load_arch("b200")
    odd = GEMM.config_space(split_params(GEMM, {"M": "384", "N": "131072", "K": "1024", "impl": "triton"})[0], chip)
    assert {("pair" in c, "cluster" in c) for c in odd if c["block_m"] == 128} == {(True, False), (False, True)}
    assert {("pair" in c, "cluster" in c) for c in odd if c["block_m"] == 64} == {(True, False)}  # 6 rows


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
    params = split_params(GEMM, {"M": "1024", "N": "1024", "K": "1024", "dtype": "fp32", "impl": "triton"})[0]
    with pytest.raises(InputError, match="no MMA to pair"):
        GEMM.resolve_config(params, {**TILE, "block_n": "128", "pair": "2"}, chip)
    assert all("pair" not in c for c in GEMM.config_space(params, chip))


def test_the_engine_refuses_a_pair_the_chip_lacks():
    _, _, paired = build("b200", {"pair": "2"}, m=256, n=256, k=256)
    trace = KernelTrace.model_validate(paired.model_dump())
    with pytest.raises(InputError, match="matrix_unit.pair is 1"):
        simulate_kernel(trace, load_arch("h100-sxm"))


def test_pair_is_only_for_shaped_matrix_work():
    from accelsim.trace.kernel import Compute
    with pytest.raises(ValueError, match="pair: only a matrix operation with a shape"):
        Compute(unit="vector", flops=1.0, pair=2)
    with pytest.raises(ValueError, match="pair: only a matrix operation with a shape"):
        Compute(unit="matrix", flops=1.0, dtype="bf16", pair=2)


def test_blackwell_accumulates_in_tensor_memory_not_registers():
    """On a chip with tensor memory a GEMM's fp32 accumulator lives there (128x256: 128 KiB
    of B200's 256 KiB, so two programs per SM), not in registers, which held one program
    per SM on the same tile."""
    from accelsim.engine.chip import gpu_occupancy
    chip, _, trace = build("b200", {"pair": "2", "num_warps": "8", "num_stages": "2"})
    assert trace.kernel.resources.tensor_memory_bytes == 128 * 256 * 4
    assert trace.kernel.resources.registers_per_thread < 64
    assert gpu_occupancy(trace, chip) == (2, "tensor_memory")
    hopper, _, on_hopper = build("h100-sxm", {"num_warps": "8", "num_stages": "2"})
    assert on_hopper.kernel.resources.tensor_memory_bytes == 0
    assert gpu_occupancy(on_hopper, hopper)[1] == "registers"
    _, _, unpaired = build("b200", {"num_warps": "8", "num_stages": "2"})
    with pytest.raises(InputError, match="has none"):
        simulate_kernel(unpaired, hopper)
    with pytest.raises(InputError, match="does not fit in b200's 262144 bytes of tensor memory"):
        build("b200", {"block_m": "256", "block_n": "512", "block_k": "32", "num_stages": "2"})
