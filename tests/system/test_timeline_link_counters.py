"""A replay's timeline counts the load on all links, on the scale-out links (NICs, DCN)
where the system has any, and the busiest link's share of its bandwidth."""

from __future__ import annotations

from accelsim.arch.model import load_arch
from accelsim.system.replay import ReplayOptions, replay
from accelsim.system.timeline import chrome_trace
from tests.system.conftest import compute, spmd

STEP = [compute("fwd", 1e-4),
        {"name": "grads", "kind": "all-reduce", "bytes": 256 << 20, "deps": ["fwd"]}]


def counters(system: str, overrides=()) -> dict[str, list[float]]:
    arch = load_arch(system, list(overrides))
    devices = arch.num_chips
    result = replay(spmd(STEP, devices=f"0-{devices - 1}", num_devices=devices), arch,
                    options=ReplayOptions(timeline=True))
    out: dict[str, list[float]] = {}
    for event in chrome_trace(result)["traceEvents"]:
        if event["ph"] == "C":
            out.setdefault(event["name"], []).append(event["args"]["value"])
    return out


def test_across_nodes_the_nics_have_their_own_counter():
    seen = counters("h100-ib-cluster", ["nodes=2"])
    out, total = seen["scale-out load GB/s (sum over NIC / DCN links)"], seen["link load GB/s (sum over links)"]
    assert max(out) > 0 and all(o <= t + 1e-6 for o, t in zip(out, total))
    assert 99.0 <= max(seen["busiest link (% of its bandwidth)"]) <= 100.0 + 1e-6  # a 256 MiB ring saturates a link


def test_one_node_has_no_scale_out_counter():
    seen = counters("dgx-h100")
    assert "scale-out load GB/s (sum over NIC / DCN links)" not in seen
    assert max(seen["busiest link (% of its bandwidth)"]) <= 100.0 + 1e-6
