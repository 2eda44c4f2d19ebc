"""The link pool reallocates once per instant (many groups' phases start together):
results are exactly those of one reallocation per start, with fewer reallocations."""

from __future__ import annotations

import pytest

from accelsim.system.replay import ReplayOptions, ReplayShortcuts, replay
from tests.system.conftest import compute, spmd

STEP = [
    compute("fwd", 3e-4),
    {"name": "ag", "kind": "all-gather", "bytes": 32 << 20, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]], "async": True},
    {"name": "tp", "kind": "all-reduce", "bytes": 8 << 20, "groups": [[0, 1], [2, 3], [4, 5], [6, 7]],
     "deps": ["fwd"]},
    compute("bwd", 6e-4, deps=["tp"]),
    {"name": "rs", "kind": "reduce-scatter", "bytes": 64 << 20, "deps": ["bwd", "ag"], "async": True},
    {"name": "ar", "kind": "all-reduce", "bytes": 1 << 20, "deps": ["rs"]},
]


@pytest.mark.parametrize("system", ["dgx-h100", "tpu-v5e-4x4"])
def test_coalesced_starts_give_the_same_replay(system):
    from accelsim.arch.model import load_arch

    arch = load_arch(system)
    trace = spmd(STEP, devices="0-7", num_devices=8)
    coalesced = replay(trace, arch, options=ReplayOptions(fold=False, timeline=True))
    each_start = ReplayShortcuts(coalesce_starts=False)
    each = replay(trace, arch, options=ReplayOptions(fold=False, timeline=True, shortcuts=each_start))
    ignore = {"sim_wall_s": 0, "events": 0}
    assert coalesced.summary() | ignore == each.summary() | ignore
    assert coalesced.segments == each.segments
    # one counter per reallocation: fewer of them, and the same rates once each instant settles
    assert len(coalesced.link_counters) < len(each.link_counters)
    assert {c[0]: c[1:] for c in coalesced.link_counters} == {c[0]: c[1:] for c in each.link_counters}
