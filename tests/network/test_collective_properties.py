"""Collectives over random sizes, kinds and algorithms on five systems (hypothesis): twice
the bytes never finishes sooner."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology
from accelsim.network.simulate import simulate_collective

SYSTEMS = ["dgx-h100", "dgx-b200", "tpu-v5e-16x16", "tpu-v5p-8x8x8", "h100-ib-cluster"]
ARCHS = {s: build_topology(load_arch(s)) for s in SYSTEMS}

@settings(max_examples=40, deadline=None)
@given(system=st.sampled_from(SYSTEMS), kind=st.sampled_from(["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"]),
       size=st.integers(10, 33).map(lambda e: 1 << e), alg=st.sampled_from(["auto", "ring", "tree", "halving-doubling", "direct", "nvls"]))
def test_bigger_never_faster(system, kind, size, alg):
    try:
        a = simulate_collective(ARCHS[system], kind, size, algorithm=alg)
        b = simulate_collective(ARCHS[system], kind, 2 * size, algorithm=alg)
    except InputError:
        assume(False); return
    assert b.latency_s >= a.latency_s * 0.999, (a.latency_s, b.latency_s, a.algorithm, b.algorithm)
