"""A measured step beside its replay: the kernels a profiler timed (a measured step,
``accelsim import profile``) against the same step replayed on a chip, kernel by kernel and
as a whole.

The replayed step is the measured one's own system trace
(:func:`accelsim.importers.profile.step_trace`: each kernel with a record simulated by its
family, the others at their measured time, the measured order across streams kept), or a
system trace of the same program from another importer (Chakra, HLO), whose ops pair with
the measured kernels by name (an XLA op's ``hlo_op``, else the kernel name) and occurrence.

The step's time is split the same way on both sides: *compute* (time some compute kernel
runs), *exposed communication* (a communication kernel runs and no compute kernel does),
*gaps* (nothing runs: launch gaps, host waits) and, on the replayed side, how much of the
compute is the chip's launch overhead that each simulated kernel carries. The part whose
difference is largest is what dominates the step's error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from accelsim.arch.model import Chip, Node
from accelsim.errors import InputError, checked, read_json_file, shown
from accelsim.importers.profile import step_trace
from accelsim.importers.profile_kernels import short_name
from accelsim.results import relative_error
from accelsim.system.replay import ReplayOptions, ReplayResult, replay
from accelsim.system.trace import COMM_KINDS, SystemTrace, check_trace
from accelsim.units import PS_PER_S
from accelsim.validate.compare import MEASURED_STEP, launch_inside_s, measurement_files

COMM_CLASSES = ("collective",)
"""Kernel classes counted as communication (``accelsim.importers.profile_kernels``)."""
PARTS = ("compute", "exposed communication", "gaps")


@dataclass(frozen=True)
class Span:
    """One kernel on one side: where it ran and for how long."""

    name: str
    stream: str
    start_s: float
    duration_s: float
    comm: bool


@dataclass(frozen=True)
class Breakdown:
    """A step's time split into :data:`PARTS` (they add up to ``step_s``)."""

    step_s: float
    compute_s: float
    exposed_comm_s: float
    gaps_s: float
    launch_s: float = 0.0
    """Of ``compute_s``: the launch overhead the simulated kernels carry."""

    def part(self, name: str) -> float:
        return {"compute": self.compute_s, "exposed communication": self.exposed_comm_s, "gaps": self.gaps_s}[name]


@dataclass(frozen=True)
class KernelPair:
    """A measured kernel and its replayed counterpart (``None``: nothing paired)."""

    index: int
    kernel: dict[str, Any]
    """The measured step's entry (name, class, impl, params, record, ...)."""
    simulated_s: float | None
    """The replayed kernel's time less the launch overhead a family kernel carries."""
    replayed_as: str
    """``family`` (simulated), ``measured`` (its measured time replayed), ``other trace`` or ``unpaired``."""


@dataclass(frozen=True)
class KernelRow:
    """The launches of one kernel (name and parameters) added up: the per-kernel table's row."""

    name: str
    kernel_class: str | None
    impl: str | None
    record: str | None
    launches: int
    measured_s: float
    share: float
    simulated_s: float | None
    replayed_as: str

    @property
    def error(self) -> float | None:
        return None if self.simulated_s is None else relative_error(self.simulated_s, self.measured_s)


@dataclass(frozen=True)
class StepComparison:
    name: str
    file: str
    device: str
    chip: str
    replayed: str
    """What was replayed: the measured step's own trace, or another trace's name."""
    measured: Breakdown
    simulated: Breakdown
    pairs: tuple[KernelPair, ...]
    rows: tuple[KernelRow, ...]
    measured_spans: tuple[Span, ...]
    simulated_spans: tuple[Span, ...]

    @property
    def error(self) -> float:
        return relative_error(self.simulated.step_s, self.measured.step_s) if self.measured.step_s else 0.0

    @property
    def dominant(self) -> str:
        """The part of the step whose simulated time differs most from the measured one."""
        return max(PARTS, key=lambda p: (abs(self.simulated.part(p) - self.measured.part(p)), -PARTS.index(p)))


# ---------------------------------------------------------------- reading measured steps


def measured_steps(paths: Sequence[str | Path]) -> list[tuple[str, dict]]:
    """The measured steps among the measurement files and folders ``paths`` (their files of
    kind ``measured_step``), each checked as far as the comparison reads it."""
    out = []
    for path in measurement_files(paths):
        data = read_json_file(path, "measurements")
        if isinstance(data, dict) and data.get("kind") == MEASURED_STEP:
            out.append((str(path), _checked_step(data, str(path))))
    return out


def _checked_step(data: dict, source: str) -> dict:
    kernels = data.get("kernels")
    if not isinstance(kernels, list) or not kernels:
        raise InputError("expected a non-empty list of the step's kernels", source=source, field="kernels")
    for i, k in enumerate(kernels):
        ok = (isinstance(k, dict) and isinstance(k.get("name"), str) and isinstance(k.get("stream"), str)
              and all(isinstance(k.get(t), int | float) and not isinstance(k.get(t), bool) and 0 <= k[t] <= 86400
                      for t in ("start_s", "duration_s")))
        if not ok:
            raise InputError("expected {name, stream, start_s, duration_s, ...} with times of 0 to 86400 s",
                             source=source, field=f"kernels[{i}]")
        if k.get("record") is not None and not isinstance(k.get("params"), dict):
            raise InputError("a kernel with a record needs its params", source=source, field=f"kernels[{i}].params")
    if not isinstance(data.get("name"), str):
        raise InputError(f"expected the step's name, got {shown(data.get('name'))}", source=source, field="name")
    return data


# ---------------------------------------------------------------- the comparison


def one_device_node(chip: Chip) -> Node:
    """``chip`` as a system of one device, for steps that move no data between devices."""
    return Node(name=chip.name, display_name=chip.display_name, chip=chip, gpus=1, switch_name="none", switch_count=0,
                switch_latency_s=0.0, nvls=False)


def check_step_device(trace: SystemTrace, device: int) -> None:
    """Refuse a ``device`` that no program of ``trace`` runs on (``--step-device``): before
    anything is replayed."""
    if device not in trace.program_of():
        raise InputError(f"the trace has no device {device}", field="step_device")


def compare_step(step: dict, file: str, chip: Chip, *, trace: SystemTrace | None = None, system=None,
                 device: int = 0) -> StepComparison:
    """The measured ``step`` beside its replay on ``chip``: its own trace by default, else
    ``trace`` (its ``device``) on ``system``."""
    kernels = step["kernels"]
    own = trace is None
    if not own:
        check_step_device(trace, device)
    if own:
        try:
            trace = checked(check_trace, step_trace(step), file)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InputError(f"its kernels do not make a step to replay: {first['msg']}", source=file,
                             field=".".join(str(part) for part in first["loc"])) from None
    replayed = replay(trace, system or one_device_node(chip), options=ReplayOptions(timeline=True))
    measured_spans = tuple(Span(k["name"], k["stream"], k["start_s"], k["duration_s"], k.get("class") in COMM_CLASSES)
                           for k in kernels)
    if own:
        simulated_spans, pairs = _own_pairs(kernels, replayed, chip)
    else:
        simulated_spans, pairs = _other_pairs(kernels, replayed, trace, device, chip)
    launches = sum(1 for p in pairs if p.replayed_as == "family") * chip.launch_overhead_s
    return StepComparison(
        name=step["name"], file=file, device=str(step.get("device", {}).get("name", "?")), chip=chip.name,
        replayed="the measured step's own kernels" if own else trace.name,
        measured=breakdown(measured_spans), simulated=breakdown(simulated_spans, launches), pairs=tuple(pairs),
        rows=tuple(kernel_rows(pairs)), measured_spans=measured_spans, simulated_spans=simulated_spans)


def _seconds(ps: int) -> float:
    return ps / PS_PER_S


OWN_OP = re.compile(r"k(\d+) ")


def _own_pairs(kernels: list[dict], replayed: ReplayResult, chip: Chip) -> tuple[tuple[Span, ...], list[KernelPair]]:
    """The replay of the step's own trace: op ``k<i> ...`` is kernel ``i``."""
    spans: dict[int, Span] = {}
    for seg in replayed.segments:
        match = OWN_OP.match(seg.name)
        if match:
            i = int(match.group(1))
            spans[i] = Span(kernels[i]["name"], seg.lane, _seconds(seg.start_ps), _seconds(seg.end_ps - seg.start_ps),
                            kernels[i].get("class") in COMM_CLASSES)
    pairs = []
    for i, k in enumerate(kernels):
        simulated = k.get("record") is not None
        launch_outside = chip.launch_overhead_s - launch_inside_s(chip)  # a kernel's device time holds the rest
        seconds = spans[i].duration_s - (launch_outside if simulated else 0.0)
        pairs.append(KernelPair(i, k, max(seconds, 0.0), "family" if simulated else "measured"))
    return tuple(spans[i] for i in sorted(spans)), pairs


def _other_pairs(kernels: list[dict], replayed: ReplayResult, trace: SystemTrace, device: int,
                 chip: Chip) -> tuple[tuple[Span, ...], list[KernelPair]]:
    """Another trace's replay: the ``n``-th measured kernel of a name pairs with the ``n``-th
    replayed op of that name (an HLO import's ops are its instructions, a Chakra import's its
    kernels) on ``device``'s class."""
    track = next(c for c, (_, devices) in enumerate(replayed.classes) if device in devices)  # check_step_device
    comm_ops = {op.name for program in trace.programs for op in program.ops if op.kind in COMM_KINDS}
    by_name: dict[str, list[Span]] = {}
    spans = []
    for seg in sorted((s for s in replayed.segments if s.track == track),
                      key=lambda s: (s.start_ps, s.name)):
        span = Span(seg.name, seg.lane, _seconds(seg.start_ps), _seconds(seg.end_ps - seg.start_ps),
                    seg.name in comm_ops or seg.kind in COMM_KINDS)
        spans.append(span)
        by_name.setdefault(seg.name, []).append(span)
    seen: dict[str, int] = {}
    pairs = []
    for i, k in enumerate(kernels):
        key = k.get("op") if k.get("op") in by_name else k["name"]
        n = seen.get(key, 0)
        seen[key] = n + 1
        found = by_name.get(key, [])
        pairs.append(KernelPair(i, k, found[n].duration_s if n < len(found) else None,
                                "other trace" if n < len(found) else "unpaired"))
    return tuple(spans), pairs


def _union_s(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def breakdown(spans: Sequence[Span], launch_s: float = 0.0) -> Breakdown:
    """The step from the first start to the last end, split into :data:`PARTS`."""
    if not spans:
        return Breakdown(0.0, 0.0, 0.0, 0.0, launch_s)
    first = min(s.start_s for s in spans)
    step = max(s.start_s + s.duration_s for s in spans) - first
    compute = [(s.start_s, s.start_s + s.duration_s) for s in spans if not s.comm]
    everything = _union_s([(s.start_s, s.start_s + s.duration_s) for s in spans])
    busy_compute = _union_s(compute)
    return Breakdown(step, busy_compute, everything - busy_compute, max(step - everything, 0.0), launch_s)


def kernel_rows(pairs: Sequence[KernelPair]) -> list[KernelRow]:
    """One row per kernel name and record (its launches added up), by measured time."""
    total = sum(p.kernel["duration_s"] for p in pairs) or 1.0
    groups: dict[tuple, list[KernelPair]] = {}
    for p in pairs:
        groups.setdefault((p.kernel["name"], p.kernel.get("record"), p.replayed_as), []).append(p)
    rows = []
    for (name, record, replayed_as), members in groups.items():
        measured = sum(p.kernel["duration_s"] for p in members)
        simulated = None if any(p.simulated_s is None for p in members) else sum(p.simulated_s for p in members)
        first = members[0].kernel
        rows.append(KernelRow(name=name, kernel_class=first.get("class"), impl=first.get("impl"), record=record,
                              launches=len(members), measured_s=measured, share=measured / total,
                              simulated_s=simulated, replayed_as=replayed_as))
    return sorted(rows, key=lambda r: (-r.measured_s, short_name(r.name), r.record or ""))
