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
from accelsim.engine.energy import clock_steps, first_fitting, voltage_scale
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
    dynamic_j: float | None = None
    """On a chip with a power model: the op's energy beyond static power (None: unknown, a
    measured op, or no power model)."""


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
                              source=cost.source, dynamic_j=cost.dynamic_j)
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
            raise _at(exc, where) from None
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
        raise _at(exc, where) from None


def _at(exc: InputError, where: str) -> InputError:
    """A family's error (naming its ``params.NAME``, as the op has them) located at the op
    ``where``; any other error of the op's kernel, at its params."""
    field = exc.field or "params"
    if field != "params" and not field.startswith("params."):
        field = f"params.{field}"
    return InputError(exc.message, field=f"{where}.{field}")


def _from_sim(sim: KernelSimulation, source: str) -> OpCost:
    dynamic = sim.energy.joules - sim.energy.joules_by_part["static"] if sim.energy else None
    return OpCost(seconds=sim.latency_s, memory_bound=sim.bound == "hbm", source=source, dynamic_j=dynamic)


def roofline_cost(chip: Chip, op: Op, where: str) -> OpCost:
    """``max(flops / derated peak, bytes / derated HBM bandwidth)``; under a power cap
    (``power.cap``) that the op's power passes, at the highest clock step whose power fits
    (the flops slow with the clock, the bytes do not: ``docs/power.md``)."""
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
    energy = roofline_energy_j(chip, op, where)
    clock = chip.clock_hz
    if energy is not None and chip.power.cap_w is not None and clock_steps(chip):
        steps = [chip.clock_hz, *clock_steps(chip)]

        def power_w(clock_hz: float) -> float:
            seconds = max(compute_s * chip.clock_hz / clock_hz, memory_s)
            dynamic = energy[0] * voltage_scale(chip.power, clock_hz, chip.clock_hz) + energy[1]
            return dynamic / seconds + chip.power.static_w if seconds > 0 else 0.0

        clock = steps[first_fitting(len(steps), lambda i: power_w(steps[i]) <= chip.power.cap_w)]
    compute_s *= chip.clock_hz / clock
    dynamic = None if energy is None else energy[0] * voltage_scale(chip.power, clock, chip.clock_hz) + energy[1]
    return OpCost(seconds=max(compute_s, memory_s), memory_bound=memory_s > compute_s, source="roofline",
                  dynamic_j=dynamic)


def roofline_energy_j(chip: Chip, op: Op, where: str) -> tuple[float, float] | None:
    """A roofline op's energy beyond static power at the chip's clock: (its flops on its unit,
    its HBM bytes); None without a power model."""
    power = chip.power
    if power is None:
        return None
    table = power.matrix_j_per_flop if op.unit == "matrix" else power.vector_j_per_flop
    per_flop = table.get(op.dtype, table.get("fp32"))
    if op.flops and per_flop is None:
        raise InputError(f"{chip.name} has no energy per {op.unit} flop for {op.dtype}", field=f"{where}.dtype")
    return (op.flops or 0.0) * (per_flop or 0.0), (op.bytes or 0.0) * power.hbm_j_per_byte
