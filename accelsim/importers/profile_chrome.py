"""Chrome trace-event JSON from profilers: the PyTorch profiler's (Kineto) and JAX's
(``jax.profiler.trace``: the ``*.trace.json.gz`` or ``perfetto_trace.json.gz`` it writes
beside ``*.xplane.pb``).

**PyTorch** (``torch.profiler.profile(..., record_shapes=True).export_chrome_trace``):
device work is the ``X`` events of category ``kernel``, ``gpu_memcpy`` and ``gpu_memset``,
each with ``args`` ``device``, ``stream``, ``grid``, ``block``, ``correlation`` and
``External id``. The op that launched a kernel is the ``cpu_op`` whose ``External id`` the
kernel carries (else the innermost ``cpu_op`` around the ``cuda_runtime`` / ``cuda_driver``
call of the same ``correlation``); the ops around it on its thread (by time nesting) come
after it. ``cpu_op`` args ``Input Dims``, ``Input type`` and ``Concrete Inputs`` are what
``record_shapes`` records. The device is the top-level ``deviceProperties`` entry of the
kernels' device; top-level ``*version*`` values are the versions. A trace of a CPU run has
no device work: its events are then each thread's outermost ``cpu_op`` s.

**JAX**: XLA ops are the ``X`` events whose ``args`` name an ``hlo_op`` (and
``hlo_module``). On a GPU they sit on the ``Stream #...`` threads of ``/device:GPU:N``
processes (one event per kernel, named by the kernel); on the CPU on the host's XLA
thread pool (one event per thunk). A ``kernel_details`` arg (``... grid:X,Y,Z
block:X,Y,Z ...``), where present, gives the launch shape. JAX traces record no input
shapes: ``--hlo`` (the program's HLO text) gives them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from accelsim.errors import InputError, shown
from accelsim.importers.profile_events import (
    MAX_EVENTS,
    MAX_INPUTS,
    MAX_TIMESTAMP_S,
    DeviceEvent,
    LaunchOp,
    Profile,
    bytes_of,
    dim3_of,
    name_of,
    read_trace_json,
    relative,
    seconds_of,
    shape_of,
    whole_of,
)

US = 1e-6
DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "runtime", "driver")
"""Host calls that launch device work (``cudaLaunchKernel``, ``cuLaunchKernel``; ``hipLaunchKernel``)."""
MAX_NESTING = 256
"""Ops kept around a launching op (a stack deeper than this is a damaged trace)."""
JAX_DEVICE = re.compile(r"/device:(?:GPU|TPU):(\d+)")
KERNEL_DETAILS = re.compile(r"grid:(\d{1,16}),(\d{1,16}),(\d{1,16})\s+block:(\d{1,16}),(\d{1,16}),(\d{1,16})")


def _id(value: Any) -> int | str:
    """A ``pid`` or ``tid`` as a key: the number or text it is (anything else, as text)."""
    return value if isinstance(value, int | str) and not isinstance(value, bool) else str(value)[:64]


def trace_events(data: Any, source: str) -> list[dict]:
    """The ``traceEvents`` of a Chrome trace (an object holding them, or the bare array)."""
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise InputError("expected a Chrome trace: an object with a 'traceEvents' array (or the array itself)",
                         source=source, field="traceEvents")
    if len(events) > MAX_EVENTS:
        raise InputError(f"{len(events)} events; at most {MAX_EVENTS} are read (profile one step: "
                         "torch.profiler.schedule, jax.profiler.trace around it)", source=source, field="traceEvents")
    return events


def is_jax(events: list) -> bool:
    return any(isinstance(e, dict) and isinstance(e.get("args"), dict) and "hlo_op" in e["args"] for e in events)


def read_chrome(path: str | Path) -> Profile:
    """A PyTorch or JAX profiler trace (which one, from what its events hold)."""
    source = str(path)
    data = read_trace_json(path, "profiler trace")
    events = trace_events(data, source)
    if is_jax(events):
        return read_jax(events, source)
    return read_pytorch(data if isinstance(data, dict) else {}, events, source)


# ---------------------------------------------------------------- PyTorch (Kineto)


def _complete(e: Any, i: int, source: str) -> tuple[float, float] | None:
    """A complete (``X``) event's start and duration in seconds; None for other events."""
    if not isinstance(e, dict) or e.get("ph") != "X":
        return None
    where = f"traceEvents[{i}]"
    start = seconds_of(e.get("ts"), US, source, f"{where}.ts", limit=MAX_TIMESTAMP_S)
    return start, seconds_of(e.get("dur"), US, source, f"{where}.dur")


def _args(e: dict, source: str, where: str) -> dict:
    args = e.get("args", {})
    if not isinstance(args, dict):
        raise InputError(f"expected an object, got {shown(args)}", source=source, field=f"{where}.args")
    return args


def _launch_op(e: dict, args: dict) -> LaunchOp:
    dims = args.get("Input Dims", [])
    types = args.get("Input type", [])
    values = args.get("Concrete Inputs", [])
    as_list = lambda v: v[:MAX_INPUTS] if isinstance(v, list) else []  # noqa: E731
    return LaunchOp(name=e["name"], dims=tuple(shape_of(d) for d in as_list(dims)),
                    types=tuple(t if isinstance(t, str) else "" for t in as_list(types)),
                    values=tuple(v if isinstance(v, str) else "" for v in as_list(values)))


class _OpTree:
    """The ``cpu_op`` s of a trace by thread, nested by time: which ops surround which."""

    def __init__(self) -> None:
        self.ops: list[tuple[float, float, Any, LaunchOp]] = []  # start, end, thread, op
        self.by_external: dict[int, int] = {}
        self.parent: list[int | None] = []

    def add(self, start: float, duration: float, thread: Any, op: LaunchOp, external: Any) -> None:
        if isinstance(external, int) and not isinstance(external, bool):
            self.by_external.setdefault(external, len(self.ops))
        self.ops.append((start, start + duration, thread, op))

    def nest(self) -> None:
        """Each op's parent: the innermost op of its thread that holds it."""
        self.parent = [None] * len(self.ops)
        order = sorted(range(len(self.ops)), key=lambda k: (str(self.ops[k][2]), self.ops[k][0], -self.ops[k][1], k))
        self.by_thread: dict[str, tuple[list[float], list[int]]] = {}
        stack: list[int] = []
        for k in order:
            start, end, t, _ = self.ops[k]
            starts, ops = self.by_thread.setdefault(str(t), ([], []))
            if not ops:
                stack = []
            starts.append(start)
            ops.append(k)
            while stack and self.ops[stack[-1]][1] < end:
                stack.pop()
            self.parent[k] = stack[-1] if stack else None
            stack.append(k)

    def innermost_at(self, thread: Any, time_s: float) -> int | None:
        """The innermost op of ``thread`` running at ``time_s`` (a launch call's start): the
        last one to start by then, or the nearest op around it that still runs."""
        starts, ops = self.by_thread.get(str(thread), ([], []))
        k = ops[bisect.bisect_right(starts, time_s) - 1] if starts and starts[0] <= time_s else None
        while k is not None and self.ops[k][1] < time_s:
            k = self.parent[k]
        return k

    def chain(self, k: int | None) -> tuple[LaunchOp, ...]:
        out = []
        while k is not None and len(out) < MAX_NESTING:
            out.append(self.ops[k][3])
            k = self.parent[k]
        return tuple(out)


def read_pytorch(data: dict, events: list, source: str) -> Profile:
    tree = _OpTree()
    launches: dict[int, tuple[Any, float]] = {}  # correlation -> (thread, start)
    device_work: list[tuple[int, dict, float, float]] = []
    for i, e in enumerate(events):
        times = _complete(e, i, source)
        if times is None:
            continue
        where = f"traceEvents[{i}]"
        category = e.get("cat")
        if category in DEVICE_CATEGORIES:
            device_work.append((i, e, *times))
        elif category == "cpu_op":
            args = _args(e, source, where)
            name_of(e.get("name"), source, f"{where}.name")
            tree.add(*times, (_id(e.get("pid")), _id(e.get("tid"))), _launch_op(e, args), args.get("External id"))
        elif category in LAUNCH_CATEGORIES:
            correlation = _args(e, source, where).get("correlation")
            if isinstance(correlation, int):
                launches.setdefault(correlation, ((_id(e.get("pid")), _id(e.get("tid"))), times[0]))
    tree.nest()
    if device_work:
        out = [_device_event(i, e, start, duration, tree, launches, source) for i, e, start, duration in device_work]
        return Profile(tool="pytorch", events=relative(out), device=_kineto_device(data, out, source),
                       versions=_versions(data))
    return Profile(tool="pytorch", events=relative(_host_work(tree)), device={"name": "cpu", "kind": "cpu"},
                   versions=_versions(data), host_work=True)


def _device_event(i: int, e: dict, start: float, duration: float, tree: _OpTree, launches: dict,
                  source: str) -> DeviceEvent:
    where = f"traceEvents[{i}]"
    args = _args(e, source, where)
    kind = DEVICE_CATEGORIES[e["cat"]]
    device = whole_of(args.get("device", e.get("pid", 0)), source, f"{where}.args.device", most=2**20)
    stream = args.get("stream", e.get("tid"))
    if not isinstance(stream, int | str) or isinstance(stream, bool):
        raise InputError(f"expected a stream id, got {shown(stream)}", source=source, field=f"{where}.args.stream")
    op = tree.by_external.get(args.get("External id")) if isinstance(args.get("External id"), int) else None
    if op is None and isinstance(args.get("correlation"), int) and args["correlation"] in launches:
        op = tree.innermost_at(*launches[args["correlation"]])
    return DeviceEvent(
        name=name_of(e.get("name"), source, f"{where}.name"), kind=kind, device=device, stream=f"stream {stream}",
        start_s=start, duration_s=duration,
        grid=dim3_of(args["grid"], source, f"{where}.args.grid") if "grid" in args else None,
        block=dim3_of(args["block"], source, f"{where}.args.block") if "block" in args else None,
        ops=tree.chain(op), bytes=bytes_of(args["bytes"], source, f"{where}.args.bytes") if "bytes" in args else None)


def _host_work(tree: _OpTree) -> list[DeviceEvent]:
    """A CPU run's work: each thread's outermost ops (what the host spent its time in)."""
    threads = {t: n for n, t in enumerate(sorted({str(op[2]) for op in tree.ops}))}
    return [DeviceEvent(name=op.name, kind="kernel", device=0, stream=f"thread {threads[str(t)]}", start_s=start,
                        duration_s=end - start, ops=tree.chain(k))
            for k, (start, end, t, op) in enumerate(tree.ops) if tree.parent[k] is None]


def _kineto_device(data: dict, events: list[DeviceEvent], source: str) -> dict:
    """The measurement format's device keys from ``deviceProperties`` of the device the
    kernels ran on (the first device, when they ran on several)."""
    ran_on = min(e.device for e in events)
    found = [d for d in data.get("deviceProperties", []) or [] if isinstance(d, dict) and d.get("id") == ran_on]
    if not found:
        return {"name": f"GPU {ran_on}", "kind": "gpu"}
    props = found[0]
    device: dict[str, Any] = {"name": name_of(props.get("name"), source, "deviceProperties.name"), "kind": "gpu"}
    if isinstance(props.get("computeMajor"), int) and isinstance(props.get("computeMinor"), int):
        device["compute_capability"] = f"{props['computeMajor']}.{props['computeMinor']}"
    for key, ours in (("numSms", "multiprocessors"), ("totalGlobalMem", "memory_bytes")):
        if key in props:
            device[ours] = whole_of(props[key], source, f"deviceProperties.{key}")
    return device


def _versions(data: dict) -> dict[str, str]:
    """Top-level scalars whose key names a version (``cuda_runtime_version``,
    ``cupti_version``; not the trace format's ``schemaVersion``), and the NCCL version of
    ``distributedInfo``."""
    out = {k: str(v) for k, v in data.items() if "version" in k.lower() and k != "schemaVersion"
           and isinstance(v, int | str) and not isinstance(v, bool) and len(str(v)) <= 64}
    info = data.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("nccl_version"), str) and len(info["nccl_version"]) <= 64:
        out["nccl"] = info["nccl_version"]
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- JAX


def _names(events: Iterable, kind: str) -> dict:
    """``process_name`` (by pid) or ``thread_name`` (by pid, tid) metadata."""
    out = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == kind and isinstance(e.get("args"), dict):
            key = _id(e.get("pid")) if kind == "process_name" else (_id(e.get("pid")), _id(e.get("tid")))
            out[key] = str(e["args"].get("name", ""))[:200]
    return out


def read_jax(events: list, source: str) -> Profile:
    processes, threads = _names(events, "process_name"), _names(events, "thread_name")
    out: list[DeviceEvent] = []
    on_device = False
    for i, e in enumerate(events):
        times = _complete(e, i, source)
        if times is None:
            continue
        where = f"traceEvents[{i}]"
        args = _args(e, source, where)
        if "hlo_op" not in args:
            continue
        device_name = JAX_DEVICE.search(processes.get(_id(e.get("pid")), ""))
        thread = threads.get((_id(e.get("pid")), _id(e.get("tid"))), str(_id(e.get("tid"))))
        if device_name and not thread.startswith("Stream"):
            continue  # the derived "XLA Ops" / "XLA Modules" lines repeat the streams' kernels
        on_device = on_device or bool(device_name)
        details = KERNEL_DETAILS.search(str(args.get("kernel_details", "")))
        grid = block = None
        if details:
            sizes = [whole_of(int(v), source, f"{where}.args.kernel_details", least=1) for v in details.groups()]
            grid, block = (sizes[0], sizes[1], sizes[2]), (sizes[3], sizes[4], sizes[5])
        out.append(DeviceEvent(
            name=name_of(e.get("name"), source, f"{where}.name"), kind="kernel",
            device=int(device_name.group(1)) if device_name else _ordinal(args, source, where),
            stream=thread, start_s=times[0], duration_s=times[1], grid=grid, block=block,
            hlo_op=name_of(args["hlo_op"], source, f"{where}.args.hlo_op"),
            hlo_module=str(args.get("hlo_module", ""))[:200] or None))
    if not out:
        raise InputError("no XLA ops in the trace (events with an 'hlo_op' arg)", source=source)
    kind = "gpu" if on_device else "cpu"
    names = sorted({processes.get(_id(e.get("pid")), "") for e in events if isinstance(e, dict)} - {""})
    device = next((n for n in names if JAX_DEVICE.search(n)), "cpu") if on_device else "cpu"
    return Profile(tool="jax", events=relative(out), device={"name": device, "kind": kind})


def _ordinal(args: dict, source: str, where: str) -> int:
    value = args.get("device_ordinal", 0)
    if isinstance(value, str) and value.isdigit() and len(value) <= 7:
        value = int(value)
    return whole_of(value, source, f"{where}.args.device_ordinal", most=2**20)
