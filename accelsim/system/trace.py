"""System trace format, version 1: what every device of a multi-chip system does in one step.

A system trace is a set of **programs**. A program is a list of ops that one or more
devices run (SPMD: one op list and a ``devices`` set, as XLA emits; per rank: one
program per device, as Chakra traces are), so a 1024-chip SPMD step is as small as a
one-chip one. Every device runs at most one program.

The ops of a program form a DAG: ``deps`` (data) and ``ctrl_deps`` (control) name ops
of the same program that must finish first. Ops on one **stream** also start in list
order, one at a time (CUDA stream / XLA schedule semantics); an ``async`` op holds its
stream only to be issued, and a ``done`` op waits for it (XLA ``*-start`` / ``*-done``
windows). Devices meet in collectives (``groups``: replica groups of device ids) and in
``send`` / ``recv`` pairs.

Compute ops say what they cost in one of four ways: a measured ``duration_s``; ``flops``
and ``bytes`` for a roofline estimate; a ``kernel_trace`` file (kernel trace format v1,
simulated on the system's chip); or a built-in kernel ``family`` with ``params``.

See ``docs/system-trace-format.md``. Traces are data: parsed and validated, never
executed. Everything that can be checked without a system (names, dependencies, cycles,
groups) is checked here; :func:`load_system_trace` fails with one line naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from accelsim.arch.model import MAX_SYSTEM_CHIPS
from accelsim.errors import InputError, checked, read_json_file, shown
from accelsim.files import write_text_atomic
from accelsim.trace.kernel import MAX_AMOUNT, Dtype, PathText, PrintableText, error_message

SYSTEM_TRACE_SCHEMA_VERSION = 1

COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast")
"""Collectives over replica groups. Sizes follow nccl-tests: ``bytes`` is the all-reduce
and broadcast buffer, the all-gather *output*, the reduce-scatter *input* and the
all-to-all buffer each rank sends (its own share included)."""
PERMUTE_KIND = "collective-permute"
P2P_KINDS = ("send", "recv")
OP_KINDS = ("compute", *COLLECTIVE_KINDS, PERMUTE_KIND, *P2P_KINDS, "done")
COMM_KINDS = (*COLLECTIVE_KINDS, PERMUTE_KIND, *P2P_KINDS)
DEFAULT_STREAM = "main"

NonNegInt = Annotated[int, Field(strict=True, ge=0)]
NonNegNumber = Annotated[float, Field(strict=True, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)]
"""Numbers are written as numbers: ``1e12`` or ``1000000``, never the string ``"1e12"``."""
DeviceId = NonNegInt
MIN_BYTES = 0.125
"""The least data an op moves, when it moves any: one bit. A byte count of 1e-300 is no
size, and the flows sharing a link would divide by it."""


def _whole_bits(count: float) -> float:
    if 0 < count < MIN_BYTES:
        raise ValueError(f"expected 0 or at least {MIN_BYTES} bytes (one bit), got {count:g}")
    return count


ByteCount = Annotated[NonNegNumber, AfterValidator(_whole_bits)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Op(_Strict):
    """One op of a program. Which fields apply depends on ``kind`` (see the doc)."""

    name: PrintableText = Field(min_length=1)
    """Unique within its program; ``deps``, ``ctrl_deps`` and ``start`` refer to it."""
    kind: str
    stream: PrintableText = Field(default=DEFAULT_STREAM, min_length=1)
    """Ops of one stream start in list order, one at a time; the name identifies it."""
    deps: list[str] = Field(default_factory=list)
    """Data dependencies: ops of the same program whose results this op reads."""
    ctrl_deps: list[str] = Field(default_factory=list)
    """Control dependencies: ops that must finish first though no data flows."""
    is_async: bool = Field(default=False, alias="async", strict=True)
    """Communication only: the op is issued on its stream and runs in the background
    (the next op of the stream may start); ops that use its result depend on it, or on a
    ``done`` op that names it."""

    # compute: exactly one cost source
    duration_s: NonNegNumber | None = None
    """Compute: a measured duration, in seconds (0: an instant op)."""
    flops: NonNegNumber | None = None
    bytes: ByteCount | None = None
    """Compute: HBM bytes read and written (roofline). Communication: the buffer size."""
    dtype: Dtype = "bf16"
    unit: Literal["matrix", "vector"] = "matrix"
    """Roofline compute: which unit's peak the flops run at."""
    kernel_trace: PathText | None = None
    """Path of a kernel trace (relative to the system trace file)."""
    family: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    """Family parameters and config values, as ``--param`` takes them (``config: auto``
    searches)."""

    # communication
    groups: list[list[DeviceId]] | None = None
    """Replica groups: each device of the program takes part in the group that holds it
    (groups may name devices of other programs). Default: one group of the program's
    devices. Broadcast: the first device of a group is the root."""
    pairs: list[tuple[DeviceId, DeviceId]] | None = None
    """collective-permute: ``[source, target]`` device pairs."""
    peer: DeviceId | None = None
    """send / recv: the other device (absolute id)."""
    peer_offset: Annotated[int, Field(strict=True)] | None = None
    """send / recv in a program of several devices: the peer is ``device + peer_offset``."""
    tag: Annotated[int, Field(strict=True, ge=0)] | None = None
    """send / recv: the n-th send from A to B with a tag matches the n-th recv on B from A
    with the same tag (untagged ones match among themselves)."""
    communicator: str | None = Field(default=None, min_length=1)
    """Collectives: ops on one group match in issue order per communicator (NCCL's, or a
    process group's name); default: one communicator per group."""
    sm_budget: Annotated[int, Field(strict=True, ge=1, le=1024)] | None = None
    """Communication: SMs the collective's kernels hold while it runs (NCCL: about one per
    channel; DeepEP's MoE kernels: their ``num_sms``); None: the replay's
    ``comm_sm_fraction``. The replay runs compute beside it on the chip's SMs minus
    these (:class:`~accelsim.system.compute.CommLoad`)."""

    # done
    start: str | None = None
    """``done``: the async op it waits for."""

    # the host (CPU) that issues the program's ops
    host_s: NonNegNumber = 0.0
    """Host time to issue this op, in seconds (an eager framework's per-op dispatch and
    the kernel launch). The host issues a program's ops in list order, one after another;
    an op starts no earlier than it has been issued. 0 everywhere: no host timeline (ops
    issued ahead of the device, as from a CUDA graph or XLA's executable)."""
    host_sync: bool = Field(default=False, strict=True)
    """The host waits for this op to finish before it issues the next (``.item()``, an
    ``assert`` on a device tensor, a stream synchronize): the device's queue drains, and
    what the host issues next starts no earlier than the host issues it."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> "Op":
        if self.kind not in OP_KINDS:
            raise ValueError(f"kind: unknown op kind {shown(self.kind)}; expected one of: {', '.join(OP_KINDS)}")
        if self.kind == "compute":
            self._check_compute()
        elif self.kind == "done":
            if self.host_s or self.host_sync:
                field = "host_s" if self.host_s else "host_sync"
                raise ValueError(f"{field}: a done op is no work the host issues (it waits on the device)")
            if self.start is None:
                raise ValueError("start: a done op names the async op it waits for")
            if self.is_async:
                raise ValueError("async: only communication ops are async (a done op waits)")
            self._forbid("bytes", "groups", "pairs", "peer", "peer_offset", "tag", "communicator", "duration_s", "flops",
                         "kernel_trace", "family", "sm_budget")
        else:
            self._check_comm()
        return self

    def _check_compute(self) -> None:
        sources = [name for name, given in (
            ("duration_s", self.duration_s is not None),
            ("flops/bytes", self.flops is not None or self.bytes is not None),
            ("kernel_trace", self.kernel_trace is not None),
            ("family", self.family is not None),
        ) if given]
        if len(sources) != 1:
            found = f"got {' and '.join(sources)}" if sources else "got none"
            raise ValueError(f"a compute op needs exactly one of duration_s, flops/bytes, kernel_trace, family; {found}")
        if self.params and self.family is None:
            raise ValueError("params: only for a family compute op")
        if self.is_async:
            raise ValueError("async: only communication ops are async")
        self._forbid("groups", "pairs", "peer", "peer_offset", "tag", "communicator", "start", "sm_budget")

    def _check_comm(self) -> None:
        if self.bytes is None:
            raise ValueError(f"bytes: needed by every {self.kind} op (its size in bytes)")
        self._forbid("duration_s", "flops", "kernel_trace", "family", "start")
        if self.kind in P2P_KINDS:
            if (self.peer is None) == (self.peer_offset is None):
                raise ValueError(f"peer: a {self.kind} op needs one of peer or peer_offset")
            self._forbid("groups", "pairs", "communicator")
        elif self.kind == PERMUTE_KIND:
            if not self.pairs:
                raise ValueError("pairs: a collective-permute needs [source, target] pairs")
            self._forbid("groups", "peer", "peer_offset", "tag", "communicator")
        else:
            self._forbid("pairs", "peer", "peer_offset", "tag")

    def _forbid(self, *names: str) -> None:
        for name in names:
            value = getattr(self, name)
            if value is not None:
                raise ValueError(f"{name}: not a field of a {self.kind} op")

    @property
    def is_comm(self) -> bool:
        return self.kind in COMM_KINDS


class Program(_Strict):
    name: PrintableText = Field(min_length=1)
    devices: list[DeviceId | str] = Field(min_length=1)
    """Device ids and inclusive ranges ``"0-1023"``."""
    ops: list[Op]

    def device_ids(self) -> list[int]:
        return expand_devices(self.devices)


class SystemTrace(_Strict):
    schema_version: Literal[1]
    kind: Literal["system_trace"] = "system_trace"
    name: PrintableText = "system-trace"
    num_devices: Annotated[int, Field(strict=True, gt=0, le=1 << 20)]
    programs: list[Program] = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form: generator, source files, model and sharding."""

    def program_of(self) -> dict[int, int]:
        """Device id -> index of the program it runs."""
        return {d: p for p, program in enumerate(self.programs) for d in program.device_ids()}

    @property
    def num_ops(self) -> int:
        """Ops over every device (an SPMD program counts once per device)."""
        return sum(len(p.ops) * len(p.device_ids()) for p in self.programs)


MAX_DEVICES = MAX_SYSTEM_CHIPS
"""Devices a trace may name (ids ``0 .. 2^20 - 1``): far above any machine, and low
enough that a range is checked before it is expanded."""


def _ascii_digits(text: str) -> bool:
    """0-9 only (``str.isdigit`` also takes other scripts' digits, and ``int`` reads them)."""
    text = text.strip()
    return text.isascii() and text.isdigit()


def expand_devices(entries: list[int | str]) -> list[int]:
    out: list[int] = []
    for entry in entries:
        if isinstance(entry, int):
            out.append(entry)
            continue
        first, sep, last = entry.partition("-")
        if not (sep and _ascii_digits(first) and _ascii_digits(last)) or int(first) > int(last):
            raise ValueError(f"expected a device id or an inclusive range like '0-7', got {shown(entry)}")
        if int(last) >= MAX_DEVICES:
            raise ValueError(f"device {int(last)} in {shown(entry)} is past the {MAX_DEVICES:,} devices a trace may name")
        out.extend(range(int(first), int(last) + 1))
    return out


# ------------------------------------------------------------------ whole-trace checks


def check_trace(trace: SystemTrace) -> None:
    """Everything beyond single fields: device sets, names, dependencies, cycles and
    groups. Raises ``ValueError("field.path: message")``."""
    owner: dict[int, int] = {}
    for p, program in enumerate(trace.programs):
        where = f"programs[{p}].devices"
        try:
            devices = program.device_ids()
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        for d in devices:
            if d >= trace.num_devices:
                raise ValueError(f"{where}: device {d} is out of range (num_devices is {trace.num_devices})")
            if d in owner:
                what = "twice" if owner[d] == p else f"also in programs[{owner[d]}]"
                raise ValueError(f"{where}: device {d} is listed {what}; a device runs one program")
            owner[d] = p
    checked: dict[tuple, dict] = {}
    for p, program in enumerate(trace.programs):
        _check_program(program, f"programs[{p}]", set(program.device_ids()), owner, trace.num_devices, checked)


def _check_program(program: Program, where: str, devices: set[int], owner: dict[int, int], n: int,
                   checked: dict[tuple, dict]) -> None:
    index: dict[str, int] = {}
    for i, op in enumerate(program.ops):
        if op.name in index:
            raise ValueError(f"{where}.ops[{i}].name: duplicate op name {shown(op.name)}")
        index[op.name] = i
    for i, op in enumerate(program.ops):
        at = f"{where}.ops[{i}]"
        for field in ("deps", "ctrl_deps"):
            for dep in getattr(op, field):
                if dep not in index:
                    raise ValueError(f"{at}.{field}: unknown op {shown(dep)}")
        if op.kind == "done":
            target = index.get(op.start)
            if target is None:
                raise ValueError(f"{at}.start: unknown op {shown(op.start)}")
            if not program.ops[target].is_async:
                raise ValueError(f"{at}.start: {shown(op.start)} is not an async op")
        _check_comm_op(op, at, devices, owner, n, checked)
    cycle = find_cycle(program)
    if cycle:
        raise ValueError(f"{where}.ops: dependency cycle: {' -> '.join(cycle)}")
    if any(op.host_s or op.host_sync for op in program.ops):
        _check_issue_order(program, where, index)


def _check_issue_order(program: Program, where: str, index: dict[str, int]) -> None:
    """A program with a host timeline lists each op after the ops it waits for: the host
    issues them in list order, and one it waits on (``host_sync``) must not wait for an op
    it has not issued."""
    for i, op in enumerate(program.ops):
        waits = [("deps", d) for d in op.deps] + [("ctrl_deps", d) for d in op.ctrl_deps]
        for field, dep in waits + ([("start", op.start)] if op.kind == "done" else []):
            if index[dep] > i:
                raise ValueError(f"{where}.ops[{i}].{field}: {shown(dep)} comes later in the list; with a host "
                                 f"timeline (host_s, host_sync) ops are listed in the order the host issues them")


def group_index(groups: tuple[tuple[int, ...], ...]) -> dict[int, tuple[int, ...]]:
    """Device -> the replica group that holds it. ``ValueError("groups[g]: ...")`` for an
    empty group or a device in two groups."""
    index: dict[int, tuple[int, ...]] = {}
    for g, group in enumerate(groups):
        if not group:
            raise ValueError(f"groups[{g}]: empty group")
        for d in group:
            if d in index:
                raise ValueError(f"groups[{g}]: device {d} is in more than one group")
            index[d] = group
    return index


def _check_comm_op(op: Op, at: str, devices: set[int], owner: dict[int, int], n: int,
                   checked: dict[tuple, dict]) -> None:
    """``checked`` maps groups already validated to their :func:`group_index`: per-rank
    programs repeat the same groups, and a 1024-member group is checked once."""
    def known(d: int, field: str) -> None:
        if d >= n:
            raise ValueError(f"{at}.{field}: device {d} is out of range (num_devices is {n})")
        if d not in owner:
            raise ValueError(f"{at}.{field}: device {d} runs no program")

    if op.kind in COLLECTIVE_KINDS and op.groups is not None:
        key = tuple(map(tuple, op.groups))
        if key not in checked:
            try:
                index = group_index(key)
            except ValueError as exc:
                raise ValueError(f"{at}.{exc}") from None
            for g, group in enumerate(key):
                for d in group:
                    known(d, f"groups[{g}]")
            checked[key] = index
        index = checked[key]
        missing = sorted(d for d in devices if d not in index)
        if missing:
            raise ValueError(f"{at}.groups: device {missing[0]} of this program is in no group")
    if op.kind == PERMUTE_KIND:
        sources: set[int] = set()
        targets: set[int] = set()
        for k, (src, dst) in enumerate(op.pairs or ()):
            known(src, f"pairs[{k}]")
            known(dst, f"pairs[{k}]")
            if src == dst:
                raise ValueError(f"{at}.pairs[{k}]: a device does not send to itself")
            if src in sources or dst in targets:  # as XLA's collective-permute: one buffer out, one in
                role, device = ("source", src) if src in sources else ("target", dst)
                raise ValueError(f"{at}.pairs[{k}]: device {device} is a {role} twice; each device sends at most "
                                 "once and receives at most once")
            sources.add(src)
            targets.add(dst)
    if op.kind in P2P_KINDS:
        for d in sorted(devices):
            peer = op.peer if op.peer is not None else d + op.peer_offset
            field = "peer" if op.peer is not None else "peer_offset"
            if not 0 <= peer < n:
                raise ValueError(f"{at}.{field}: peer of device {d} is {peer}, out of range (num_devices is {n})")
            known(peer, field)
            if peer == d:
                raise ValueError(f"{at}.{field}: device {d} would {op.kind} to itself")


def predecessors(program: Program) -> list[list[int]]:
    """For every op, the ops that must finish (or, for an async op before it on its
    stream, be issued) before it starts: its deps, its stream predecessor, and for a
    ``done`` op its async start."""
    index = {op.name: i for i, op in enumerate(program.ops)}
    last_on_stream: dict[str, int] = {}
    out: list[list[int]] = []
    for i, op in enumerate(program.ops):
        before = [index[d] for d in (*op.deps, *op.ctrl_deps)]
        if op.stream in last_on_stream:
            before.append(last_on_stream[op.stream])
        if op.kind == "done":
            before.append(index[op.start])
        last_on_stream[op.stream] = i
        out.append(sorted(set(before)))
    return out


def find_cycle(program: Program) -> list[str]:
    """Op names along a dependency cycle (first == last), or ``[]``. Iterative, so a
    long chain cannot overflow the stack."""
    preds = predecessors(program)
    state = [0] * len(preds)  # 0 new, 1 on the path, 2 done
    for root in range(len(preds)):
        if state[root]:
            continue
        path, stack = [root], [iter(preds[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                loop = path[path.index(nxt):] + [nxt]
                return [program.ops[i].name for i in reversed(loop)]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(preds[nxt]))
    return []


# ------------------------------------------------------------------ reading and writing


def parse_system_trace(data: Any, source: str) -> SystemTrace:
    """Validate decoded JSON as a system trace; bad input raises a located InputError."""
    if not isinstance(data, dict):
        raise InputError("expected a JSON object (a system trace)", source=source)
    version = data.get("schema_version")
    if type(version) is not int or version != SYSTEM_TRACE_SCHEMA_VERSION:
        raise InputError(
            f"unsupported schema_version {shown(version)}; this accelsim reads system traces of version "
            f"{SYSTEM_TRACE_SCHEMA_VERSION}",
            source=source, field="schema_version",
        )
    try:
        trace = SystemTrace.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise _located(error, source) from None
    return checked(check_trace, trace, source)


def _located(error: dict, source: str) -> InputError:
    # union members pydantic tried ("int", "str", "constrained-int"), not fields of the file
    loc = [part for part in error["loc"] if part not in ("int", "str") and not str(part).startswith("constrained-")]
    message = error_message(error)
    if error["type"] == "value_error" and ": " in message and message.split(": ", 1)[0].isidentifier():
        sub, message = message.split(": ", 1)
        loc = [*loc, sub]
    return InputError(message, source=source, field=loc or None)


def load_system_trace(path: str | Path) -> SystemTrace:
    data = read_json_file(path, "system trace")
    return parse_system_trace(data, str(path))


def trace_json(trace: SystemTrace) -> str:
    """Compact JSON with defaults left out (``async`` written under its JSON name)."""
    data = {"schema_version": trace.schema_version, "kind": trace.kind}
    data.update(trace.model_dump(mode="json", exclude_defaults=True, by_alias=True))
    return json.dumps(data, separators=(",", ":"))


def save_system_trace(trace: SystemTrace, path: str | Path) -> None:
    """Write compact JSON atomically (a temporary file renamed into place)."""
    write_text_atomic(path, trace_json(trace))


def iter_ops(trace: SystemTrace) -> Iterator[tuple[int, int, Op]]:
    """(program index, op index, op) over the whole trace."""
    for p, program in enumerate(trace.programs):
        for i, op in enumerate(program.ops):
            yield p, i, op
