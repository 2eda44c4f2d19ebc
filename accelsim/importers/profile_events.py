"""What a profiler trace says about one measured run, whatever tool wrote it: the device
work (kernels, copies, fills) with its times, streams and launch shapes, the op that
launched each (with its input shapes), the device and the versions. The readers
(:mod:`accelsim.importers.profile_chrome` for PyTorch and JAX traces,
:mod:`accelsim.importers.profile_nsys` for Nsight Systems exports) fill these records;
:mod:`accelsim.importers.profile` maps them to kernel families and measurement records.

Every size the input can give is bounded here, once, before any work grows with it.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from accelsim.errors import MAX_INPUT_BYTES, InputError, parse_json_text, shown
from accelsim.units import MAX_EXACT_BYTES, MAX_MEASURED_S, is_finite_number

MAX_EVENTS = 5_000_000
"""Trace events read from one file (a profiled training step of a large model holds a few
hundred thousand; past this a trace is a whole run, to be cut to a step first)."""
MAX_NAME_CHARS = 4096
"""A kernel or op name (C++ template instantiations run to a couple of thousand characters)."""
MAX_DIM = 2**53
"""A tensor dimension, a grid or block size: exact in a double, far past any real tensor."""
MAX_RANK = 16
"""Dimensions of one input shape (PyTorch allows up to 64; models use a handful)."""
MAX_INPUTS = 64
"""Inputs of one op whose shapes are kept (an op of many tensors, a TensorList, keeps its first)."""
MAX_TIMESTAMP_S = 10 * 365 * 86400.0
"""A timestamp, from whatever origin the tool counts (boot, epoch, profile start): ten
years of seconds; a trace's times are taken relative to its first kernel."""

KINDS = ("kernel", "memcpy", "memset")
"""Device work a trace lists: kernels, copies (``Memcpy DtoD``, ``HtoD``, ...) and fills."""


@dataclass(frozen=True)
class LaunchOp:
    """A framework op on the launching host thread (``aten::mm``), with what
    ``record_shapes`` kept: each input's dimensions (``()`` for a scalar or an input
    without a shape), its type as the tool names it (``c10::BFloat16``, ``float``) and its
    value where the tool records constants (``Concrete Inputs``: ``"True"``, ``"-1"``)."""

    name: str
    dims: tuple[tuple[int, ...] | None, ...] = ()
    types: tuple[str, ...] = ()
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceEvent:
    """One piece of device work as the trace timed it."""

    name: str
    kind: str
    """One of :data:`KINDS`."""
    device: int
    stream: str
    start_s: float
    """From the trace's own origin; :func:`relative` moves it to the first event."""
    duration_s: float
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    ops: tuple[LaunchOp, ...] = ()
    """The op that launched it and the ops around that one, innermost first (``aten::mm``
    inside ``aten::matmul`` inside ``aten::linear``)."""
    bytes: int | None = None
    """A copy's or fill's size."""
    hlo_op: str | None = None
    """An XLA program's op that ran it (JAX traces: ``fusion.12``), in ``hlo_module``."""
    hlo_module: str | None = None
    hlo_class: str | None = None
    """The kernel family the HLO op is (a fusion around one dot: ``gemm``), where the
    program's HLO was given (:mod:`accelsim.importers.profile_hlo`)."""
    params: dict[str, Any] | None = None
    """That family's parameters, from the HLO's shapes."""


@dataclass(frozen=True)
class Profile:
    """One trace's device work, in start order, with what the trace says of where it ran."""

    tool: str
    """``pytorch``, ``jax`` or ``nsys``."""
    events: tuple[DeviceEvent, ...]
    device: dict[str, Any] = field(default_factory=dict)
    """``name``, ``kind`` (``gpu``/``cpu``), and where given ``compute_capability``,
    ``multiprocessors``, ``memory_bytes`` (the measurement format's device keys)."""
    versions: dict[str, str] = field(default_factory=dict)
    host_work: bool = False
    """No device work in the trace (a CPU run): ``events`` are the host's top-level ops."""


def read_trace_bytes(path: str | Path, what: str) -> bytes:
    """The bytes of a trace file, gunzipped when it is gzip (``.json.gz``, as the PyTorch
    profiler and JAX write them), at most :data:`MAX_INPUT_BYTES` either way (a small file
    that unpacks to terabytes is refused while unpacking)."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            raise InputError(f"cannot read {what}: not a regular file", source=str(path))
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_INPUT_BYTES:
                raise InputError(f"cannot read {what}: larger than {MAX_INPUT_BYTES // 2**30} GiB", source=str(path))
            data = f.read()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    if data[:2] != b"\x1f\x8b":
        return data
    unpack = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = unpack.decompress(data, MAX_INPUT_BYTES + 1)
    except zlib.error as exc:
        raise InputError(f"cannot read {what}: damaged gzip data ({exc})", source=str(path)) from None
    if len(out) > MAX_INPUT_BYTES or unpack.unconsumed_tail:
        raise InputError(f"cannot read {what}: unpacks to more than {MAX_INPUT_BYTES // 2**30} GiB",
                         source=str(path))
    if not unpack.eof:
        raise InputError(f"cannot read {what}: the gzip data is cut short", source=str(path))
    return out


def read_trace_json(path: str | Path, what: str) -> Any:
    """A (possibly gzipped) JSON trace, parsed as :func:`parse_json_text` parses JSON."""
    data = read_trace_bytes(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what}: not UTF-8 JSON (byte {exc.start})", source=str(path)) from None
    return parse_json_text(text, str(path))



# ---------------------------------------------------------------- bounded values


def name_of(value: Any, source: str, where: str) -> str:
    """A kernel or op name: a non-empty string of at most :data:`MAX_NAME_CHARS`."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS:
        raise InputError(f"expected a name (text of 1 to {MAX_NAME_CHARS} characters), got {shown(value)}",
                         source=source, field=where)
    return value


def seconds_of(value: Any, scale: float, source: str, where: str, *, limit: float = MAX_MEASURED_S) -> float:
    """A time given in ``1/scale`` seconds (microseconds: ``scale`` 1e-6), as seconds from 0
    to ``limit``."""
    if not is_finite_number(value) or isinstance(value, bool) or not 0 <= value * scale <= limit:
        raise InputError(f"expected a time of 0 to {limit:g} s, got {shown(value)} (x {scale:g} s)",
                         source=source, field=where)
    return float(value) * scale


def whole_of(value: Any, source: str, where: str, *, least: int = 0, most: int = MAX_DIM) -> int:
    """An integer from ``least`` to ``most`` (a JSON integer, not ``3.0`` or ``"3"``)."""
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
        raise InputError(f"expected a whole number from {least} to {most}, got {shown(value)}", source=source,
                         field=where)
    return value


def dim3_of(value: Any, source: str, where: str) -> tuple[int, int, int]:
    """A grid or block: three sizes of at least 1."""
    if not isinstance(value, list) or len(value) != 3:
        raise InputError(f"expected [x, y, z], got {shown(value)}", source=source, field=where)
    x, y, z = (whole_of(v, source, where, least=1) for v in value)
    return x, y, z


def shape_of(value: Any) -> tuple[int, ...] | None:
    """One input's dimensions as ``record_shapes`` lists them, or None where the entry is
    not a flat list of sizes (a TensorList's nested lists, a scalar's ``[]`` is ``()``)."""
    if not isinstance(value, list) or len(value) > MAX_RANK:
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM for d in value):
        return None
    return tuple(value)


def bytes_of(value: Any, source: str, where: str) -> int:
    return whole_of(value, source, where, most=MAX_EXACT_BYTES)


def relative(events: list[DeviceEvent]) -> tuple[DeviceEvent, ...]:
    """The events in start order (then device, stream, name: ties in a fixed order), with
    times from the first one's start."""
    if not events:
        return ()
    origin = min(e.start_s for e in events)
    ordered = sorted(events, key=lambda e: (e.start_s, e.device, e.stream, e.name, e.duration_s))
    return tuple(replace(e, start_s=e.start_s - origin) for e in ordered)
