"""Chrome trace-event JSON (Perfetto) for a system replay: a process per replayed device
class (one device, or the interchangeable devices folded with it), a track per stream
plus a ``comm`` track for data moving on links and, where the program has a host timeline,
a ``host`` track of the host issuing each op, and counters of the load on all links
(each link a byte crosses counts it), on the scale-out links (NICs, DCN) where there are
any, and of the busiest link's share of its bandwidth (where the fabric saturates).

:func:`exposed_comm_by_op` reads the same spans to say which communication ops the
step's exposed communication belongs to."""

from __future__ import annotations

import bisect
from collections import defaultdict
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
    for seg in (*result.segments, *result.host_segments):
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


def exposed_comm_by_op(result: ReplayResult) -> dict[tuple[int, str], float]:
    """Per (replayed class, communication op), the seconds of its class's exposed
    communication that are the op's: while the op is in flight (issued, until its data has
    arrived) and no compute op of the class runs. An instant when several ops are in
    flight and nothing computes is shared equally among them, so a class's values sum to
    its ``exposed_comm_s`` (``DeviceStats``). Needs a replay with ``timeline=True``."""
    compute: dict[int, list[tuple[int, int]]] = defaultdict(list)
    comm: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for seg in result.segments:
        if seg.kind == "compute":
            compute[seg.track].append((seg.start_ps, seg.end_ps))
        elif seg.lane != "comm" and seg.kind != "done" and seg.end_ps > seg.start_ps:
            comm[seg.track].append((seg.start_ps, seg.end_ps, seg.name))
    exposed: dict[tuple[int, str], float] = defaultdict(float)
    for track, spans in comm.items():
        busy = _merged(compute[track])
        edges = sorted({t for start, end, _ in spans for t in (start, end)})
        in_flight: dict[int, list[str]] = defaultdict(list)
        for start, end, name in spans:
            for k in range(bisect.bisect_left(edges, start), bisect.bisect_left(edges, end)):
                in_flight[k].append(name)
        for k, names in sorted(in_flight.items()):
            bare_ps = edges[k + 1] - edges[k] - _overlap(busy, edges[k], edges[k + 1])
            for name in names:
                exposed[(track, name)] += bare_ps / len(names) / PS_PER_S
    return dict(exposed)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of ``spans``, as sorted disjoint intervals."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _overlap(busy: list[tuple[int, int]], start: int, end: int) -> int:
    """How much of ``[start, end)`` the disjoint sorted intervals ``busy`` cover."""
    covered = 0
    k = max(0, bisect.bisect_right(busy, (start, start)) - 1)
    while k < len(busy) and busy[k][0] < end:
        covered += max(0, min(end, busy[k][1]) - max(start, busy[k][0]))
        k += 1
    return covered


def _span(devices: tuple[int, ...]) -> str:
    if list(devices) == list(range(devices[0], devices[0] + len(devices))):
        return f"{devices[0]}-{devices[-1]}"
    return ",".join(map(str, devices[:8])) + (",..." if len(devices) > 8 else "")
