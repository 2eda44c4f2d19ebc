"""accelsim's time for each imported op beside XLA's own estimate of it.

XLA's TPU compiler writes its cost model's estimate of every fusion and op it schedules
into the op's ``backend_config`` (``"estimated_cycles"``, TensorCore cycles).
``accelsim import hlo`` keeps them in the trace (``metadata.xla_estimates``: per op name,
the cycles, times the trips of a folded loop, and the HLO kind: the fusion kind or the
opcode). :func:`compare_with_xla` prices the same ops alone on a chip as the replay does
(:class:`accelsim.system.costs.CostModel`) and sets the two side by side, per op, per
kind and over the step. XLA's cycles become seconds at the chip's clock (the cycles are
the compile target's: compare on the chip the program was compiled for).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from accelsim.arch.model import Chip
from accelsim.errors import InputError, shown
from accelsim.system.costs import CostModel
from accelsim.system.trace import SystemTrace

MAX_XLA_COUNT = 2**63 - 1
"""The most cycles or windows an estimate may give (XLA writes both as 64-bit integers): a larger
number is refused, not turned into a float it overflows."""


@dataclass(frozen=True, kw_only=True)
class OpEstimate:
    """One op's time alone: accelsim's and XLA's."""

    name: str
    kind: str
    """The fusion kind (``kLoop``, ``kOutput``, ``kInput``, ``kCustom``) or the opcode."""
    accelsim_s: float
    xla_s: float
    hbm_bytes: float
    """The op's HBM traffic, as the trace counts it."""
    xla_cycles_per_window: float | None = None
    """XLA's cycles over the windows it tiled the op into (``window_config``); ``None``
    where it wrote no tiling."""


@dataclass(frozen=True, kw_only=True)
class KindTotals:
    kind: str
    ops: int
    accelsim_s: float
    xla_s: float
    hbm_bytes: float
    fewest_xla_s: float
    """XLA's smallest estimate of one op of the kind: at most its fixed cost per op."""
    fewest_xla_cycles_per_window: float | None = None
    """XLA's least cycles per window over the kind's tiled ops: at most what it charges
    every window whatever its bytes (``None``: no op of the kind is tiled)."""

    @property
    def xla_hbm_bytes_per_s(self) -> float:
        """The HBM rate XLA's estimates imply for the kind: its bytes over XLA's time."""
        return self.hbm_bytes / self.xla_s if self.xla_s else 0.0


@dataclass(frozen=True, kw_only=True)
class EstimateComparison:
    """accelsim's and XLA's times of the ops XLA estimated, and what XLA left out."""

    clock_hz: float
    ops: tuple[OpEstimate, ...]
    unestimated_ops: int
    """Compute ops XLA wrote no estimate for (collective fusions' compute, copies it
    scheduled as DMAs, ...)."""
    unestimated_s: float
    """accelsim's time of those ops."""

    @property
    def accelsim_s(self) -> float:
        return math.fsum(op.accelsim_s for op in self.ops)

    @property
    def xla_s(self) -> float:
        return math.fsum(op.xla_s for op in self.ops)

    def by_kind(self) -> list[KindTotals]:
        """Totals per kind, XLA's largest first (name breaking ties)."""
        groups: dict[str, list[OpEstimate]] = defaultdict(list)
        for op in self.ops:
            groups[op.kind].append(op)
        totals = [KindTotals(kind=kind, ops=len(ops), accelsim_s=math.fsum(o.accelsim_s for o in ops),
                             xla_s=math.fsum(o.xla_s for o in ops), hbm_bytes=math.fsum(o.hbm_bytes for o in ops),
                             fewest_xla_s=min(o.xla_s for o in ops),
                             fewest_xla_cycles_per_window=min((o.xla_cycles_per_window for o in ops
                                                               if o.xla_cycles_per_window is not None), default=None))
                  for kind, ops in groups.items()]
        return sorted(totals, key=lambda t: (-t.xla_s, t.kind))

    def largest_differences(self, count: int) -> list[OpEstimate]:
        """The ``count`` ops whose two times differ most (absolute), then by name."""
        return sorted(self.ops, key=lambda op: (-abs(op.accelsim_s - op.xla_s), op.name))[:count]

    def to_json(self, top: int = 20) -> dict:
        return {
            "clock_hz": self.clock_hz,
            "ops": len(self.ops),
            "accelsim_s": self.accelsim_s,
            "xla_s": self.xla_s,
            "unestimated_ops": self.unestimated_ops,
            "unestimated_accelsim_s": self.unestimated_s,
            "by_kind": [{"kind": t.kind, "ops": t.ops, "accelsim_s": t.accelsim_s, "xla_s": t.xla_s,
                         "hbm_bytes": t.hbm_bytes, "fewest_xla_s": t.fewest_xla_s,
                         "fewest_xla_cycles_per_window": t.fewest_xla_cycles_per_window}
                        for t in self.by_kind()],
            "largest_differences": [{"op": o.name, "kind": o.kind, "accelsim_s": o.accelsim_s, "xla_s": o.xla_s}
                                    for o in self.largest_differences(top)],
        }


def compare_with_xla(trace: SystemTrace, chip: Chip, base_dir: Path | str = ".",
                     roofline_overhead_s: float = 0.0) -> EstimateComparison | None:
    """The comparison for a trace ``accelsim import hlo`` wrote from TPU HLO; ``None`` when
    the trace carries no XLA estimates."""
    estimates = trace.metadata.get("xla_estimates")
    if not isinstance(estimates, dict) or not estimates:
        return None
    costs = CostModel(chip, Path(base_dir), roofline_overhead_s)
    ops: list[OpEstimate] = []
    unestimated, unestimated_s = 0, 0.0
    for p, program in enumerate(trace.programs):
        for i, op in enumerate(program.ops):
            if op.kind != "compute":
                continue
            seconds = costs.cost(op, f"programs[{p}].ops[{i}]").seconds
            entry = estimates.get(op.name)
            if entry is None:
                unestimated += 1
                unestimated_s += seconds
                continue
            cycles, windows = _cycles(entry, op.name), _windows(entry, op.name)
            ops.append(OpEstimate(name=op.name, kind=_kind(entry, op.name), accelsim_s=seconds,
                                  xla_s=cycles / chip.clock_hz, hbm_bytes=op.bytes or 0.0,
                                  xla_cycles_per_window=cycles / windows if windows else None))
    return EstimateComparison(clock_hz=chip.clock_hz, ops=tuple(ops), unestimated_ops=unestimated,
                              unestimated_s=unestimated_s)


def _cycles(entry: object, name: str) -> float:
    cycles = entry.get("cycles") if isinstance(entry, dict) else None
    if isinstance(cycles, bool) or not isinstance(cycles, int | float) or not 0 <= cycles <= MAX_XLA_COUNT:
        raise InputError(f"expected a number of cycles from 0 to 2^63 - 1, got {shown(str(cycles)[:40])}",
                         field=f"metadata.xla_estimates[{shown(name[:60])}].cycles")
    return float(cycles)


def _windows(entry: dict, name: str) -> int | None:
    windows = entry.get("windows")
    if windows is None:
        return None
    if isinstance(windows, bool) or not isinstance(windows, int) or not 1 <= windows <= MAX_XLA_COUNT:
        raise InputError(f"expected a whole number of windows from 1 to 2^63 - 1, got {shown(str(windows)[:40])}",
                         field=f"metadata.xla_estimates[{shown(name[:60])}].windows")
    return windows


def _kind(entry: dict, name: str) -> str:
    kind = entry.get("kind", "")
    if not isinstance(kind, str) or len(kind) > 64:
        raise InputError("expected an HLO kind or opcode", field=f"metadata.xla_estimates[{shown(name[:60])}].kind")
    return kind
