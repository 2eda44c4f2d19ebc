"""What a compute op of a system trace costs on a chip: its time alone and what bounds it.

Four sources (see ``docs/system-trace-format.md``): a measured duration, a roofline
estimate from flops and bytes, a kernel trace simulated by the kernel engine, or a
built-in kernel family. Kernels are simulated once per distinct kernel and chip
(:class:`CostModel` caches them), however many ops and devices use them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from accelsim.arch.model import Chip
from accelsim.engine.chip import KernelSimulation, simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.base import Family
from accelsim.families.search import run_given, split_params
from accelsim.system.trace import Op
from accelsim.trace.kernel import load_trace


@dataclass(frozen=True, kw_only=True)
class OpCost:
    """A compute op's time alone on its chip and whether memory bounds it (which decides
    whether a concurrent collective slows it through SMs or through HBM bandwidth)."""

    seconds: float
    memory_bound: bool
    source: str
    """``measured``, ``roofline``, ``kernel_trace`` or ``family``."""


class CostModel:
    """Costs of compute ops on ``chip``; kernel paths are relative to ``base_dir``."""

    def __init__(self, chip: Chip, base_dir: Path, roofline_overhead_s: float = 0.0) -> None:
        """``roofline_overhead_s``: a fixed cost added to every roofline op
        (:attr:`~accelsim.system.replay.ReplayOptions.roofline_overhead_s`)."""
        if not (math.isfinite(roofline_overhead_s) and roofline_overhead_s >= 0):
            raise InputError(f"expected a non-negative time, got {roofline_overhead_s!r}", field="roofline_overhead")
        self.chip = chip
        self.base_dir = base_dir
        self.roofline_overhead_s = roofline_overhead_s
        self._kernels: dict[tuple, OpCost] = {}
        self._rooflines: dict[tuple, OpCost] = {}
        self.kernels_simulated = 0

    def cost(self, op: Op, where: str) -> OpCost:
        """``where`` (e.g. ``programs[0].ops[3]``) locates errors."""
        if op.duration_s is not None:
            return OpCost(seconds=op.duration_s, memory_bound=False, source="measured")
        if op.kernel_trace is not None:
            return self._cached(("trace", op.kernel_trace), lambda: self._kernel_trace(op.kernel_trace, where))
        if op.family is not None:
            key = ("family", op.family, tuple(sorted((k, str(v)) for k, v in op.params.items())))
            return self._cached(key, lambda: self._family(op, where))
        key = ("roofline", op.flops, op.bytes, op.dtype, op.unit)
        if key not in self._rooflines:  # per-rank traces repeat the same op in every program
            cost = roofline_cost(self.chip, op, where)
            if self.roofline_overhead_s:
                cost = OpCost(seconds=cost.seconds + self.roofline_overhead_s, memory_bound=cost.memory_bound,
                              source=cost.source)
            self._rooflines[key] = cost
        return self._rooflines[key]

    def _cached(self, key: tuple, make) -> OpCost:
        if key not in self._kernels:
            self._kernels[key] = make()
            self.kernels_simulated += 1
        return self._kernels[key]

    def _kernel_trace(self, path: str, where: str) -> OpCost:
        full = Path(path) if Path(path).is_absolute() else self.base_dir / path
        try:
            trace = load_trace(full)
        except InputError as exc:  # say which op names the file, as well as the file
            exc.message = f"{exc.message} (the kernel_trace of {where})"
            raise
        try:
            return _from_sim(simulate_kernel(trace, self.chip), "kernel_trace")
        except InputError as exc:
            exc.source = exc.source or str(full)  # the engine names fields of the kernel trace, not of this one
            raise

    def _family(self, op: Op, where: str) -> OpCost:
        family, params, config_given, auto = family_args(op, where)
        try:
            sim = run_given(family, params, config_given, auto, self.chip)[0].sim
        except InputError as exc:
            raise _at(exc, f"{where}.params") from None
        return _from_sim(sim, "family")


def family_args(op: Op, where: str) -> tuple[Family, dict, dict, bool]:
    """A family op's family and parameters, as :func:`~accelsim.families.search.split_params`
    gives them (problem, config, whether to search); errors are located at ``where``. Needs
    no chip, so a sweep checks a system trace's family ops with it once, up front."""
    try:
        family = get_family(op.family)
    except InputError as exc:
        raise InputError(exc.message, field=f"{where}.family") from None
    given = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in op.params.items()}
    try:
        return (family, *split_params(family, given))
    except InputError as exc:
        raise _at(exc, f"{where}.params") from None


def _at(exc: InputError, source: str) -> InputError:
    return InputError(exc.message, field=f"{source}.{exc.field}" if exc.field else source)


def _from_sim(sim: KernelSimulation, source: str) -> OpCost:
    return OpCost(seconds=sim.latency_s, memory_bound=sim.bound == "hbm", source=source)


def roofline_cost(chip: Chip, op: Op, where: str) -> OpCost:
    """``max(flops / derated peak, bytes / derated HBM bandwidth)``."""
    flops, nbytes = op.flops or 0.0, op.bytes or 0.0
    table = chip.matrix.flops_per_cycle_per_core if op.unit == "matrix" else chip.vector.flops_per_cycle_per_core
    if flops and op.dtype not in table:
        raise InputError(f"{chip.name} has no {op.unit} unit rate for {op.dtype}; it has: {', '.join(table)}",
                         field=f"{where}.dtype")
    if op.unit == "matrix":
        peak = chip.matrix_flops_per_s(op.dtype) * chip.matrix.efficiency if flops else 1.0
    else:
        peak = chip.vector_flops_per_s(op.dtype) * chip.vector.efficiency if flops else 1.0
    compute_s = flops / peak
    memory_s = nbytes / (chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency)
    return OpCost(seconds=max(compute_s, memory_s), memory_bound=memory_s > compute_s, source="roofline")
