"""Nsight Systems SQLite exports (``nsys export --type sqlite``), read-only.

Device work is ``CUPTI_ACTIVITY_KIND_KERNEL`` (``start``, ``end`` in ns, ``deviceId``,
``streamId``, ``correlationId``, ``gridX..Z``, ``blockX..Z``, the name as a ``StringIds`` id
in ``demangledName``, else ``shortName``), ``CUPTI_ACTIVITY_KIND_MEMCPY`` (``bytes``,
``copyKind``) and ``CUPTI_ACTIVITY_KIND_MEMSET``. The op that launched a kernel is the
innermost NVTX range (``NVTX_EVENTS``, push/pop and start/end ranges, text in ``text`` or
``textId``) around its runtime call (``CUPTI_ACTIVITY_KIND_RUNTIME`` of the same
``correlationId``) on the same thread; PyTorch's ``emit_nvtx(record_shapes=True)`` writes
ranges ``aten::mm, seq = 12, op_id = 40, sizes = [[16, 4096], [4096, 3584]]``, whose sizes
become the op's input shapes (types are not recorded: dtypes are then unknown and such
kernels keep no record unless ``--hlo`` or another source says). The device name is
``TARGET_INFO_GPU.name``. Columns are looked up by name, so exports of other nsys versions
read as long as these are there (schema: NVIDIA's "SQLite Export Schema Reference").
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from accelsim.errors import InputError
from accelsim.importers.profile_events import (
    MAX_EVENTS,
    MAX_TIMESTAMP_S,
    DeviceEvent,
    LaunchOp,
    Profile,
    bytes_of,
    name_of,
    relative,
    seconds_of,
    shape_of,
    whole_of,
)

NS = 1e-9
COPY_KINDS = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}
"""``copyKind`` values (CUPTI's ``CUpti_ActivityMemcpyKind``) and the names Kineto gives them."""
NVTX_OP = re.compile(r"^([\w:.]+)(,|$)")
MAX_SIZES_CHARS = 4096


def connect(path: str | Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)  # read-only
    except (sqlite3.Error, ValueError) as exc:
        raise InputError(f"cannot open the Nsight Systems export: {exc}", source=str(path)) from None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _rows(db: sqlite3.Connection, table: str, wanted: tuple[str, ...], source: str, required: tuple[str, ...] = ()):
    """Rows of ``table`` as dicts of the ``wanted`` columns it has (None for the others);
    none when the table is missing; at most :data:`MAX_EVENTS`."""
    have = _columns(db, table)
    if not have:
        return []
    missing = [c for c in required if c not in have]
    if missing:
        raise InputError(f"expected columns {', '.join(required)}; missing {', '.join(missing)}", source=source,
                         field=table)
    chosen = [c for c in wanted if c in have]
    rows = db.execute(f"SELECT {', '.join(chosen)} FROM {table} LIMIT {MAX_EVENTS + 1}").fetchall()
    if len(rows) > MAX_EVENTS:
        raise InputError(f"more than {MAX_EVENTS} rows; export one step (nsys --capture-range)", source=source,
                         field=table)
    return [{**dict.fromkeys(wanted), **dict(zip(chosen, row))} for row in rows]


def read_nsys(path: str | Path) -> Profile:
    source = str(path)
    db = connect(path)
    try:
        return _read(db, source)
    except sqlite3.Error as exc:
        raise InputError(f"cannot read the Nsight Systems export: {exc}", source=source) from None
    finally:
        db.close()


def _read(db: sqlite3.Connection, source: str) -> Profile:
    strings = {row[0]: row[1] for row in db.execute(f"SELECT id, value FROM StringIds LIMIT {MAX_EVENTS}")} \
        if _columns(db, "StringIds") else {}
    ranges = _nvtx_ranges(db, strings, source)
    launches = {r["correlationId"]: (r["globalTid"], r["start"]) for r in _rows(
        db, "CUPTI_ACTIVITY_KIND_RUNTIME", ("correlationId", "globalTid", "start"), source)}
    kernel_columns = ("start", "end", "deviceId", "streamId", "correlationId", "demangledName", "shortName",
                      "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
    events = []
    for i, r in enumerate(_rows(db, "CUPTI_ACTIVITY_KIND_KERNEL", kernel_columns, source,
                                required=("start", "end", "deviceId", "streamId"))):
        where = f"CUPTI_ACTIVITY_KIND_KERNEL row {i + 1}"
        name_id = r["demangledName"] if r["demangledName"] in strings else r["shortName"]
        start, duration = _times(r, source, where)
        events.append(DeviceEvent(
            name=name_of(strings.get(name_id), source, f"{where}: demangledName"), kind="kernel",
            device=whole_of(r["deviceId"], source, f"{where}: deviceId", most=2**20), stream=f"stream {r['streamId']}",
            start_s=start, duration_s=duration, grid=_dim3(r, "grid", source, where),
            block=_dim3(r, "block", source, where), ops=_launching(r["correlationId"], launches, ranges)))
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        for i, r in enumerate(_rows(db, table, ("start", "end", "deviceId", "streamId", "correlationId", "bytes",
                                                "copyKind"), source, required=("start", "end", "deviceId", "streamId"))):
            where = f"{table} row {i + 1}"
            start, duration = _times(r, source, where)
            name = f"Memcpy {COPY_KINDS.get(r['copyKind'], 'other')}" if kind == "memcpy" else "Memset (Device)"
            events.append(DeviceEvent(
                name=name, kind=kind, device=whole_of(r["deviceId"], source, f"{where}: deviceId", most=2**20),
                stream=f"stream {r['streamId']}", start_s=start, duration_s=duration,
                bytes=bytes_of(r["bytes"], source, f"{where}: bytes") if r["bytes"] is not None else None,
                ops=_launching(r["correlationId"], launches, ranges)))
    if not events:
        raise InputError("no CUDA kernels, copies or memsets in the export (CUPTI_ACTIVITY_KIND_KERNEL is empty or "
                         "missing: profile with --trace=cuda)", source=source)
    return Profile(tool="nsys", events=relative(events), device=_device(db, events, source))


def _times(r: dict, source: str, where: str) -> tuple[float, float]:
    start = seconds_of(r["start"], NS, source, f"{where}: start", limit=MAX_TIMESTAMP_S)
    end = seconds_of(r["end"], NS, source, f"{where}: end", limit=MAX_TIMESTAMP_S)
    if end < start:
        raise InputError(f"ends ({r['end']} ns) before it starts ({r['start']} ns)", source=source, field=where)
    return start, seconds_of(end - start, 1.0, source, f"{where}: end - start")


def _dim3(r: dict, what: str, source: str, where: str) -> tuple[int, int, int] | None:
    values = [r[f"{what}{axis}"] for axis in "XYZ"]
    if any(v is None for v in values):
        return None
    x, y, z = (whole_of(v, source, f"{where}: {what}{axis}", least=1) for v, axis in zip(values, "XYZ"))
    return x, y, z


def _nvtx_ranges(db: sqlite3.Connection, strings: dict, source: str) -> dict:
    """NVTX ranges with an op name, by thread: [(start, end, LaunchOp)] sorted by start."""
    out: dict = {}
    for r in _rows(db, "NVTX_EVENTS", ("start", "end", "text", "textId", "globalTid"), source):
        text = r["text"] if isinstance(r["text"], str) else strings.get(r["textId"])
        if not isinstance(text, str) or not isinstance(r["start"], int) or not isinstance(r["end"], int):
            continue
        op = _nvtx_op(text)
        if op is not None:
            out.setdefault(r["globalTid"], []).append((r["start"], r["end"], op))
    for spans in out.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
    return out


def _nvtx_op(text: str) -> LaunchOp | None:
    """``aten::mm, seq = 12, op_id = 40, sizes = [[16, 4096], [4096, 3584]]`` as an op with its
    input shapes (the bracketed list after ``sizes =``, read as JSON)."""
    text = text[:MAX_SIZES_CHARS]
    match = NVTX_OP.match(text)
    if match is None or "::" not in match.group(1):
        return None
    at = text.find("sizes = [")
    sizes: tuple = ()
    if at >= 0:
        depth, end = 0, None
        for i, ch in enumerate(text[at + 8:], at + 8):
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0:
                end = i + 1
                break
        try:
            value = json.loads(text[at + 8:end]) if end else None
        except ValueError:
            value = None
        sizes = tuple(shape_of(v) for v in value) if isinstance(value, list) else ()
    return LaunchOp(name=match.group(1), dims=sizes)


def _launching(correlation, launches: dict, ranges: dict) -> tuple[LaunchOp, ...]:
    """The ops around the runtime call that launched it, innermost first."""
    if correlation not in launches:
        return ()
    thread, at = launches[correlation]
    around = [span for span in ranges.get(thread, ()) if span[0] <= at <= span[1]]
    return tuple(op for _, _, op in sorted(around, key=lambda s: -s[0]))


def _device(db: sqlite3.Connection, events: list[DeviceEvent], source: str) -> dict:
    ran_on = min(e.device for e in events)
    gpus = _rows(db, "TARGET_INFO_GPU", ("id", "name", "smCount", "totalMemory"), source)
    found = [g for g in gpus if g["id"] == ran_on] or gpus[:1]
    if not found or not isinstance(found[0]["name"], str):
        return {"name": f"GPU {ran_on}", "kind": "gpu"}
    device = {"name": name_of(found[0]["name"], source, "TARGET_INFO_GPU.name"), "kind": "gpu"}
    if found[0]["smCount"] is not None:
        device["multiprocessors"] = whole_of(found[0]["smCount"], source, "TARGET_INFO_GPU.smCount")
    if found[0]["totalMemory"] is not None:
        device["memory_bytes"] = whole_of(found[0]["totalMemory"], source, "TARGET_INFO_GPU.totalMemory")
    return device

