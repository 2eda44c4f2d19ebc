"""Chrome trace-event JSON (Perfetto) for a system replay: a process per replayed device
class (one device, or the interchangeable devices folded with it), a track per stream
plus a ``comm`` track for data moving on links, and counters of the load on all links
(each link a byte crosses counts it), on the scale-out links (NICs, DCN) where there are
any, and of the busiest link's share of its bandwidth (where the fabric saturates)."""

from __future__ import annotations

from typing import Any

from accelsim.system.replay import ReplayResult
from accelsim.units import PS_PER_S

_US_PER_PS = 1e6 / PS_PER_S


def chrome_trace(result: ReplayResult) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for c, (program, devices) in enumerate(result.classes):
        label = f"device {devices[0]}" if len(devices) == 1 else f"devices {_span(devices)} ({len(devices)})"
        events.append({"ph": "M", "pid": c + 1, "name": "process_name", "args": {"name": f"{label}: {program}"}})
        events.append({"ph": "M", "pid": c + 1, "name": "process_sort_index", "args": {"sort_index": c}})
    for seg in result.segments:
        events.append({
            "ph": "X", "pid": seg.track + 1, "tid": seg.lane, "name": seg.name, "cat": seg.kind,
            "ts": seg.start_ps * _US_PER_PS, "dur": (seg.end_ps - seg.start_ps) * _US_PER_PS,
        })
    if result.link_counters:
        events.append({"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "links"}})
    scale_out = any(out for _, _, out, _ in result.link_counters)
    for now_ps, rate, out, busiest in result.link_counters:
        # every link a byte crosses counts it (a two-hop route twice), at wire load (link
        # efficiency included): how busy the links are, not the payload rate
        ts = now_ps * _US_PER_PS
        events.append({"ph": "C", "pid": 0, "name": "link load GB/s (sum over links)", "ts": ts,
                       "args": {"value": rate * 1e-9}})
        if scale_out:
            events.append({"ph": "C", "pid": 0, "name": "scale-out load GB/s (sum over NIC / DCN links)", "ts": ts,
                           "args": {"value": out * 1e-9}})
        events.append({"ph": "C", "pid": 0, "name": "busiest link (% of its bandwidth)", "ts": ts,
                       "args": {"value": round(busiest * 100, 6)}})
    summary = result.summary()
    summary.pop("devices")
    summary.pop("sim_wall_s", None)  # the file holds results only: the same inputs, the same bytes
    summary["links"] = summary["links"][:20]
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": summary}


def _span(devices: tuple[int, ...]) -> str:
    if list(devices) == list(range(devices[0], devices[0] + len(devices))):
        return f"{devices[0]}-{devices[-1]}"
    return ",".join(map(str, devices[:8])) + (",..." if len(devices) > 8 else "")
