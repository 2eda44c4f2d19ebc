"""Multislice: tori joined over the data-centre network, collectives hierarchical."""

import pytest

from accelsim.network import simulate_collective

GB = 1e9
S = 2**30
PS = 1e-12


def test_slices_meet_over_each_chips_dcn_port(ideal_multislice):
    topo = ideal_multislice()
    assert topo.route(0, 16) == ("slice0.chip0->dcn", "dcn->slice1.chip0")
    assert topo.route(16, 17)[0].startswith("slice1:")


def test_all_reduce_across_slices_is_slice_reduce_scatter_dcn_all_reduce_slice_all_gather(ideal_multislice):
    two = ideal_multislice()
    r = simulate_collective(two, "all-reduce", S)
    slice_rs = simulate_collective(ideal_multislice(slices=1), "reduce-scatter", S).latency_s
    slice_ag = simulate_collective(ideal_multislice(slices=1), "all-gather", S).latency_s
    dcn = 2 * 1 / 2 * (S / 16) / (5 * GB)  # 2-slice ring on each chip's shard: both halves to one peer
    assert r.algorithm == "hierarchical"
    assert r.latency_s == pytest.approx(slice_rs + dcn + slice_ag, rel=1e-6)


def test_dcn_latency_counts_once_per_dcn_step(ideal_multislice):
    base = simulate_collective(ideal_multislice(), "all-gather", 1024).latency_s
    slow = simulate_collective(ideal_multislice(dcn_latency_s=10e-6), "all-gather", 1024).latency_s
    assert slow - base == pytest.approx(10e-6, abs=1e-9)  # one ring step over 2 slices


@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "all-to-all"])
def test_plan_for_takes_any_group_across_slices(ideal_multislice, kind):
    from accelsim.network import make_request, plan_for

    topo = ideal_multislice(slices=3)
    for group in ([0, 16], [0, 1, 16, 17, 32, 33], [3, 20, 40, 41], list(range(48))):
        assert plan_for(topo, make_request(topo, kind, 2**20, group=group)).lanes
