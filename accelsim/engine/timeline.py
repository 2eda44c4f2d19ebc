"""Chrome trace-event JSON (opens in Perfetto / chrome://tracing) for a kernel replay:
a track per core group with its cohorts of programs, and a counter track per memory
level with its bandwidth over time."""

from __future__ import annotations

from typing import Any

from accelsim.engine.chip import KernelSimulation
from accelsim.units import PS_PER_S

_US_PER_PS = 1e6 / PS_PER_S
_COUNTER_UNITS = {"hbm": "HBM GB/s", "shared_cache": "L2/CMEM GB/s", "port": "core ports GB/s",
                  "local_memory": "local memory GB/s", "matrix": "busy matrix units (cores)",
                  "vector": "busy vector units (cores)"}
_UNITLESS = ("matrix", "vector")


def chrome_trace(sim: KernelSimulation) -> dict[str, Any]:
    launch_us = sim.launch_overhead_s * 1e6
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": f"{sim.arch}: {sim.kernel}"}},
        {"ph": "X", "pid": 1, "tid": "launch", "name": "kernel launch", "ts": 0.0, "dur": launch_us},
    ]
    for seg in sim.segments:
        events.append({
            "ph": "X", "pid": 1, "tid": seg.track, "name": seg.name,
            "ts": launch_us + seg.start_ps * _US_PER_PS,
            "dur": (seg.end_ps - seg.start_ps) * _US_PER_PS,
            "args": seg.args,
        })
    for now_ps, rates in sim.counters:
        for resource, rate in rates.items():
            scale = 1.0 if resource in _UNITLESS else 1e-9
            events.append({
                "ph": "C", "pid": 1, "name": _COUNTER_UNITS.get(resource, resource),
                "ts": launch_us + now_ps * _US_PER_PS, "args": {"value": rate * scale},
            })
    summary = sim.summary()
    summary.pop("sim_wall_s")  # the file holds results only: the same inputs, the same bytes
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": summary}
