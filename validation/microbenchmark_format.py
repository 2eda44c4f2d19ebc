"""The microbenchmark file format, version 1: hardware numbers, not kernel latencies.

A ``microbenchmarks`` file holds the records of one device: each the figure of one
microbenchmark (a pointer chase's latency per load, a cache level's bandwidth, an MMA's
throughput, a launch's cost) under named parameters, with its source. Chip configs cite
them (``hbm.latency``, ``shared_cache.bandwidth``, ...); ``accelsim validate`` and
``calibrate`` pass over these files (they are not kernel-family records).
``docs/measurement-format.md`` ("Microbenchmarks") describes it; this module is its
executable part, shared by ``measure_micro.py`` (which measures them on a GPU) and
``reference/build_reference.py`` (which converts published ones). Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

SCHEMA_VERSION = 1
KIND = "microbenchmarks"

VALUE_FIELDS = ("latency_s", "latency_cycles", "bytes_per_s", "flops_per_s", "clock_hz", "capacity_bytes")
"""A record's figures, each with its unit in its name; a benchmark says which it has
(``latency_s`` beside a bandwidth or a throughput: the timed call it was derived from)."""

BENCHMARKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (parameters every record names, figures it may give (at least one))
    "load_latency": (("working_set_bytes",), ("latency_s", "latency_cycles")),
    "read_bandwidth": (("programs_per_sm", "bytes_in_flight_per_sm"), ("bytes_per_s", "latency_s")),
    "cache_bandwidth": (("working_set_bytes",), ("bytes_per_s", "latency_s")),
    "stream_bandwidth": (("kernel",), ("bytes_per_s",)),
    "cache_capacity": (("level",), ("capacity_bytes",)),
    "mma_throughput": (("dtype", "shape"), ("flops_per_s", "latency_s")),
    "mma_latency": (("dtype", "shape"), ("latency_s", "latency_cycles")),
    "async_copy_latency": (("mechanism", "bytes"), ("latency_s", "latency_cycles")),
    "shared_memory_bandwidth": (("programs_per_sm",), ("bytes_per_s",)),
    "launch_overhead": (("programs",), ("latency_s",)),
    "cta_cost": (("programs_per_sm",), ("latency_s",)),
    "kernel_interval": (("programs", "timing"), ("latency_s",)),
    "clock_under_load": (("load",), ("clock_hz",)),
    "flushed_read": (("working_set_bytes", "flush"), ("latency_s", "bytes_per_s")),
    "vector_throughput": (("dtype", "instruction"), ("flops_per_s",)),
}
"""What each benchmark measures:

* ``load_latency``: seconds (or cycles) per dependent load of a pointer chase over a working set;
* ``read_bandwidth``: bytes per second read by a launch keeping ``bytes_in_flight_per_sm`` in
  flight per SM (Little's law: where it stops rising is the loaded latency);
* ``cache_bandwidth``: bytes per second read from a working set that fits a cache level (or not);
* ``stream_bandwidth``: bytes per second of a STREAM-like kernel the kernel families do not model;
* ``cache_capacity``: a cache's capacity as its latency cliff shows it;
* ``mma_throughput`` / ``mma_latency``: tensor-core operations per second of back-to-back
  independent MMAs of one instruction shape (``m64n256k16``) and dtype, and the latency of a
  dependent chain of them;
* ``async_copy_latency``: one asynchronous copy into shared memory (``tma``, ``cp.async``);
* ``shared_memory_bandwidth``: bytes per second read from shared memory by every SM;
* ``launch_overhead``: seconds per launch of an empty kernel of ``programs`` programs, back to back;
* ``cta_cost``: seconds a program's launch and retirement add (empty programs, many waves);
* ``kernel_interval``: an empty kernel of ``programs`` programs timed as ``timing`` says:
  ``profiler`` (its device interval, CUPTI) or ``graph`` (the period of dependent launches from a
  CUDA graph: the interval and the gap before the next kernel);
* ``clock_under_load``: the SM clock while the tensor cores (or HBM) are kept busy;
* ``flushed_read``: seconds to read a working set once right after a cache flush of the kind
  ``flush``: ``write`` (a buffer zeroed, as ``triton.testing.do_bench`` does: the L2 left full
  of dirty lines), ``read`` (a buffer read: the L2 left clean), ``write-idle`` (zeroed, then the
  GPU kept idle): write against read is what the dirty lines' write-backs cost a kernel;
* ``vector_throughput``: flops per second of independent chains of one CUDA-core instruction
  (``ffma``: a fused multiply-add, 2 flop) on every SM, what ``vector_unit.efficiency`` is
  derived from (with the clock the source read).
"""

RECORD_FIELDS = ("id", "benchmark", "params", "source", "notes", "measured")


def validate_record(record: Any) -> list[str]:
    """Problems with one microbenchmark record (empty when it is valid)."""
    if not isinstance(record, dict):
        return ["expected an object"]
    errors = [f"{key}: missing" for key in RECORD_FIELDS if key not in record]
    if errors:
        return errors
    for key in ("id", "source"):
        if not isinstance(record[key], str) or not record[key].strip():
            errors.append(f"{key}: expected a non-empty string")
    if not isinstance(record["notes"], str):
        errors.append("notes: expected a string")
    if record["measured"] is not True:
        errors.append("measured: expected true (vendor peaks are not microbenchmarks)")
    benchmark = record["benchmark"]
    if benchmark not in BENCHMARKS:
        return errors + [f"benchmark: {benchmark!r} is not one of {sorted(BENCHMARKS)}"]
    required, figures = BENCHMARKS[benchmark]
    params = record["params"]
    if not isinstance(params, dict) or not all(isinstance(v, str | int | float) and not isinstance(v, bool)
                                               for v in params.values()):
        errors.append("params: expected an object of numbers and strings")
    elif any(key not in params for key in required):
        errors.append(f"params: a {benchmark} record names {list(required)}")
    given = [key for key in VALUE_FIELDS if key in record]
    if not given or any(key not in figures for key in given):
        errors.append(f"figures: a {benchmark} record gives one or more of {list(figures)}, got {given}")
    for key in given:
        if not _positive(record[key]):
            errors.append(f"{key}: expected a positive number")
    samples = record.get("samples_s", [])
    if not isinstance(samples, list) or not all(_positive(s) for s in samples):
        errors.append("samples_s: expected a list of positive seconds")
    return errors


def validate_file(data: Any) -> list[str]:
    """Every problem with a decoded microbenchmark file, each prefixed by where it is."""
    if not isinstance(data, dict):
        return ["expected a JSON object"]
    if data.get("schema_version") != SCHEMA_VERSION or data.get("kind") != KIND:
        return [f"expected kind {KIND!r} and schema_version {SCHEMA_VERSION}"]
    errors = []
    device = data.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("name"), str) or "arch" not in device:
        errors.append("device: expected an object with 'name' and 'arch'")
    provenance = data.get("provenance")
    if not isinstance(provenance, dict) or any(k not in provenance for k in ("date", "command", "source")):
        errors.append("provenance: expected an object with 'date', 'command' and 'source'")
    records = data.get("records")
    if not isinstance(records, list):
        return errors + ["records: expected a list"]
    seen: set[str] = set()
    for index, record in enumerate(records):
        errors += [f"records[{index}].{e}" for e in validate_record(record)]
        rid = record.get("id") if isinstance(record, dict) else None
        if isinstance(rid, str):
            if rid in seen:
                errors.append(f"records[{index}].id: {rid!r} is not unique")
            seen.add(rid)
    return errors


def _positive(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return value > 0 and (isinstance(value, int) or math.isfinite(value))
