"""Each of the replay's shortcuts is a layer that can be switched off, and switched off
it gives the same result: folded groups, representative parts, coalesced starts (see
test_coalesced_reallocation.py), one clock per slowdown lane, and all of them at once
(``PLAIN``) with every device replayed on its own."""

from __future__ import annotations

import dataclasses

import pytest

from accelsim.arch.model import load_arch
from accelsim.system.replay import PLAIN, ReplayOptions, ReplayShortcuts, replay
from tests.system.conftest import compute, programs, spmd

MIB = 2**20

STEP = [
    compute("fwd", 3e-4),
    {"name": "ag", "kind": "all-gather", "bytes": 32 * MIB, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]], "async": True},
    {"name": "tp", "kind": "all-reduce", "bytes": 8 * MIB, "groups": [[0, 1], [2, 3], [4, 5], [6, 7]],
     "deps": ["fwd"]},
    compute("bwd", 6e-4, deps=["tp"]),
    {"name": "side", "kind": "compute", "bytes": 4e9, "stream": "side"},
    compute("side2", 2.5e-4, stream="side2"),
    {"name": "rs", "kind": "reduce-scatter", "bytes": 64 * MIB, "deps": ["bwd", "ag"], "async": True},
    {"name": "ar", "kind": "all-reduce", "bytes": MIB, "deps": ["rs"]},
]


QUADS = [
    compute("fwd", 3e-4),
    {"name": "ag", "kind": "all-gather", "bytes": 32 * MIB, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]], "async": True},
    compute("bwd", 6e-4),
    {"name": "rs", "kind": "reduce-scatter", "bytes": 64 * MIB, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]],
     "deps": ["bwd", "ag"]},
]
"""Collectives on groups that are translates of one another, whose links nothing else
loads meanwhile: a folded class plays one group of each."""


def _same(a, b) -> None:
    assert a.step_time_s == b.step_time_s
    assert a.devices == b.devices


def _without(**off) -> ReplayOptions:
    return ReplayOptions(shortcuts=ReplayShortcuts(**off))


@pytest.mark.parametrize("system", ["dgx-h100", "tpu-v5e-4x4"])
def test_folded_groups_give_the_plain_result(system):
    arch = load_arch(system)
    on, off = replay(spmd(QUADS), arch), replay(spmd(QUADS), arch, options=_without(fold_groups=False))
    _same(on, off)
    assert on.comm_groups_folded > 0 and off.comm_groups_folded == 0
    assert on.comm_instances + on.comm_groups_folded == off.comm_instances
    assert {l.link: l.bytes for l in on.links} == pytest.approx({l.link: l.bytes for l in off.links}, rel=1e-12)


def test_representative_parts_give_the_plain_result():
    """A 2-node all-reduce is planned as node 0's part; alone, that part is exact."""
    two_nodes = load_arch("h100-ib-cluster", ["nodes=2"])
    trace = programs([{"name": "a", "devices": ["0-15"], "ops": [
        compute("c", 1e-4), {"name": "ar", "kind": "all-reduce", "bytes": 256 * MIB, "deps": ["c"]}]}], 16)
    on, off = replay(trace, two_nodes), replay(trace, two_nodes, options=_without(representative_parts=False))
    _same(on, off)
    # the part lists the links it crossed; played whole, every node's links are listed
    assert {l.link for l in on.links} < {l.link for l in off.links}


def test_one_clock_per_lane_gives_the_plain_result(dgx):
    """Compute ops of several streams share a device while collectives slow them (SMs for
    compute-bound ops, HBM for memory-bound ones)."""
    options = ReplayOptions(comm_sm_fraction=0.25, comm_hbm_fraction=0.5)
    on = replay(spmd(STEP), dgx, options=options)
    off = replay(spmd(STEP), dgx, options=dataclasses.replace(options, shortcuts=ReplayShortcuts(shared_clock=False)))
    _same(on, off)
    assert on.events == off.events


def test_one_clock_per_lane_with_many_streams(dgx):
    ops = [compute(f"k{i}", 1e-6 * (1 + i % 7), stream=f"s{i % 50}") for i in range(400)]
    trace = programs([{"name": "one", "devices": [0], "ops": ops}], 1)
    on, off = replay(trace, dgx), replay(trace, dgx, options=_without(shared_clock=False))
    _same(on, off)


@pytest.mark.parametrize("system", ["dgx-h100", "tpu-v5e-4x4"])
def test_no_shortcut_at_all_gives_the_same_step(system):
    arch = load_arch(system)
    on = replay(spmd(STEP), arch, options=ReplayOptions(timeline=True))
    plain = replay(spmd(STEP), arch, options=ReplayOptions(fold=False, timeline=True, shortcuts=PLAIN))
    _same(on, plain)
    assert len(plain.classes) == 8 and len(on.classes) == 1
    # the same spans on every device's tracks: the folded class's are device 0's
    assert [s for s in on.segments if s.lane != "comm"] == [s for s in plain.segments if s.track == 0
                                                          and s.lane != "comm"]
