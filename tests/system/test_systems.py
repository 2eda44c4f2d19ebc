"""Replays run on every kind of system: nodes, clusters, tori and multislice."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.system.replay import ReplayOptions, chip_of, comm_fractions, replay
from tests.system.conftest import compute, spmd

STEP = [compute("fwd", 1e-3), {"name": "grads", "kind": "all-reduce", "bytes": 64 << 20, "deps": ["fwd"]}]


@pytest.mark.parametrize("system, devices, n", [
    ("h100-ib-cluster", "0-15", 16),     # two DGX nodes over InfiniBand
    ("tpu-v5p-8x8x8-x2", "0-1023", 1024),  # two slices over DCN
])
def test_a_step_replays_on_bigger_systems(system, devices, n):
    arch = load_arch(system)
    r = replay(spmd(STEP, devices=devices, num_devices=n), arch)
    assert r.step_time_s > 1e-3 and len(r.devices) == n
    assert r.summary()["exposed_comm_s"] == pytest.approx(r.step_time_s - 1e-3, rel=1e-9)


def test_gpu_systems_take_compute_for_collectives_and_tpus_do_not():
    cluster, torus = load_arch("h100-ib-cluster"), load_arch("tpu-v5p-8x8x8")
    sm, hbm = comm_fractions(chip_of(cluster), ReplayOptions())
    assert sm == pytest.approx(16 / 132) and hbm is None  # each collective takes its own HBM share
    assert comm_fractions(chip_of(torus), ReplayOptions()) == (0.0, 0.0)
