"""Compute and communication overlap where dependencies allow, and only there."""

from __future__ import annotations

import pytest

from accelsim.network import build_topology, simulate_collective
from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import compute, spmd

SIZE = 256 * 2**20
NO_INTERFERENCE = ReplayOptions(comm_sm_fraction=0.0, comm_hbm_fraction=0.0)


@pytest.fixture(scope="module")
def ar_alone_s(dgx):
    return simulate_collective(build_topology(dgx), "all-reduce", SIZE).latency_s


def ar(**extra) -> dict:
    return {"name": "ar", "kind": "all-reduce", "bytes": SIZE, **extra}


def test_a_lone_collective_takes_its_own_time(dgx, ar_alone_s):
    r = replay(spmd([ar()]), dgx)
    assert r.step_time_s == pytest.approx(ar_alone_s, rel=1e-9)
    assert r.summary()["exposed_comm_s"] == pytest.approx(ar_alone_s, rel=1e-9)


def test_sync_collective_serialises_with_compute(dgx, ar_alone_s):
    r = replay(spmd([compute("a", 1e-3), ar(deps=["a"]), compute("b", 1e-3)]), dgx, options=NO_INTERFERENCE)
    assert r.step_time_s == pytest.approx(2e-3 + ar_alone_s, rel=1e-9)
    assert r.summary()["overlapped_comm_s"] == 0


def test_async_window_overlaps_compute(dgx, ar_alone_s):
    ops = [compute("a", 1e-3), ar(deps=["a"], **{"async": True}), compute("b", 1e-3),
           {"name": "done", "kind": "done", "start": "ar"}]
    r = replay(spmd(ops), dgx, options=NO_INTERFERENCE)
    assert ar_alone_s < 1e-3  # so the collective hides entirely behind b
    assert r.step_time_s == pytest.approx(2e-3, rel=1e-9)
    s = r.summary()
    assert s["overlapped_comm_s"] == pytest.approx(ar_alone_s, rel=1e-9) and s["exposed_comm_s"] == 0


def test_a_reader_of_the_async_result_waits_for_it(dgx, ar_alone_s):
    ops = [ar(**{"async": True}), compute("uses_result", 1e-4, deps=["ar"])]
    r = replay(spmd(ops), dgx, options=NO_INTERFERENCE)
    assert r.step_time_s == pytest.approx(ar_alone_s + 1e-4, rel=1e-9)


def test_a_separate_comm_stream_overlaps_like_async(dgx, ar_alone_s):
    ops = [compute("a", 1e-3, stream="compute"), ar(deps=["a"], stream="comm"), compute("b", 1e-3, stream="compute")]
    r = replay(spmd(ops), dgx, options=NO_INTERFERENCE)
    assert r.step_time_s == pytest.approx(2e-3, rel=1e-9)


def test_gpu_collective_slows_concurrent_compute(dgx, ar_alone_s):
    """While the collective runs, b progresses at 1 - comm_sm_fraction of its speed."""
    ops = [ar(**{"async": True}), compute("b", 1e-3)]
    r = replay(spmd(ops), dgx, options=ReplayOptions(comm_sm_fraction=0.25))
    expected = 1e-3 + ar_alone_s * 0.25  # b loses a quarter of its speed for ar_alone_s
    assert r.step_time_s == pytest.approx(expected, rel=1e-6)


def test_two_compute_streams_share_the_device(dgx):
    ops = [compute("a", 1e-3, stream="s1"), compute("b", 1e-3, stream="s2")]
    r = replay(spmd(ops), dgx)
    assert r.step_time_s == pytest.approx(2e-3, rel=1e-9)


def test_a_collective_takes_hbm_at_twice_its_own_bus_bandwidth(dgx, ar_alone_s):
    """A memory-bound op beside an all-reduce loses 2 x busbw / HBM of its speed while
    the all-reduce runs: every byte sent is read from HBM, every byte received written."""
    from accelsim.network import plan_for
    from accelsim.network.collectives import BUS_FACTORS, Request, estimate_s
    from accelsim.system.replay import chip_of

    chip = chip_of(dgx)
    hbm = chip.hbm.bandwidth_bytes_per_s
    b_alone = 2e-3
    ops = [ar(**{"async": True}), {"name": "b", "kind": "compute", "bytes": b_alone * hbm * chip.hbm.efficiency}]
    r = replay(spmd(ops), dgx, options=ReplayOptions(comm_sm_fraction=0.0))
    topo = build_topology(dgx)
    plan = plan_for(topo, Request(kind="all-reduce", size_bytes=SIZE, ranks=tuple(range(8))))
    share = 2 * BUS_FACTORS["all-reduce"](8) * SIZE / estimate_s(topo, plan) / hbm
    assert 0.1 < share < 0.5
    assert r.step_time_s == pytest.approx(b_alone + ar_alone_s * share, rel=1e-6)


def test_faster_nvlink_does_not_slow_compute_beside_a_nic_bound_collective():
    """The HBM share is the collective's own rate, not the links' peak: doubling NVLink
    made a 2-node data-parallel step 2.6% slower (12.68 -> 13.10 ms) with its all-reduce
    as slow as before."""
    from accelsim.arch.model import load_arch

    ops = [compute("fwd", 1e-3),
           {"name": "ar", "kind": "all-reduce", "bytes": SIZE, "async": True},
           {"name": "bwd", "kind": "compute", "bytes": 2e10, "flops": 0},
           {"name": "d", "kind": "done", "start": "ar"}]
    steps = []
    for link in ("25 GB/s", "50 GB/s", "100 GB/s"):
        system = load_arch("h100-ib-cluster", ["nodes=2", f"node.chip.interconnect.bandwidth_per_link={link}"])
        steps.append(replay(spmd(ops, devices="0-15", num_devices=16), system).step_time_s)
    assert all(later <= earlier * (1 + 1e-9) for earlier, later in zip(steps, steps[1:])), steps
