"""A kernel's energy and power on a chip, and the clock a power cap leaves it (``docs/power.md``).

Energy is the chip's activity times its energy per operation and per byte
(:class:`~accelsim.arch.model.PowerModel`), plus its static power over the kernel's time:

    E = sum_dtype matrix_flops x e_matrix + vector_flops x e_vector + special_ops x e_special
        + local_bytes x e_local + l2_bytes x e_l2 + hbm_bytes x e_hbm + P_static x latency

Operations in the clock's domain (the units, shared memory, the L2) cost ``(f / f0) ^ (k - 1)``
of their energy at a clock ``f`` below the chip's clock ``f0`` (``V^2`` with ``V`` tracking ``f``
down to ``power.dvfs.floor_clock``, where it stops dropping; ``k`` is ``power.dvfs.exponent``);
HBM bytes cost the same at any clock. Under a cap
(``power.cap``), a kernel whose average power at ``f0`` is above it is replayed at lower clock
steps until the highest step whose power fits is found; bandwidths outside the clock's domain
(HBM, and a TPU's DMA port, which is HBM's) keep their bytes per second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from accelsim.arch.model import Chip, GpuChip, PowerModel, TpuChip
from accelsim.engine.programs import executed_matrix_flops, program_templates, program_vars, repeats, template_members
from accelsim.engine.result import KernelSimulation
from accelsim.errors import InputError
from accelsim.trace.kernel import KernelTrace

CLOCK_PARTS = ("matrix_unit", "vector_unit", "special_function", "local_memory", "shared_cache")
"""The parts of a kernel's energy in the clock's (and the voltage's) domain."""


@dataclass(frozen=True, kw_only=True)
class KernelActivity:
    """What a kernel did, in the units its energy is counted in."""

    matrix_flops: Mapping[str, float]
    """Executed matrix flops (padding to the unit's granule and recomputation included), by dtype."""
    vector_flops: Mapping[str, float]
    special_ops: float
    local_memory_bytes: float
    shared_cache_bytes: float
    hbm_bytes: float


@dataclass(frozen=True, kw_only=True)
class KernelEnergy:
    """A kernel's energy, by part, over its latency at a clock."""

    joules_by_part: Mapping[str, float]
    """A plain dict (a result crosses to and from worker processes, which pickle it):
    ``matrix_unit``, ``vector_unit``, ``special_function``, ``local_memory``, ``shared_cache``,
    ``hbm`` and ``static`` (static power over the latency)."""
    latency_s: float
    clock_hz: float

    @property
    def joules(self) -> float:
        return sum(self.joules_by_part.values())

    @property
    def average_power_w(self) -> float:
        return self.joules / self.latency_s if self.latency_s > 0 else 0.0


def kernel_activity(trace: KernelTrace, chip: Chip, sim: KernelSimulation) -> KernelActivity:
    """The kernel's flops by unit and dtype (from the trace, on this chip's granule) and its bytes
    at each level (what the replay's shared memory, L2 and HBM served)."""
    matrix: dict[str, float] = {}
    vector: dict[str, float] = {}
    special = 0.0
    variables = program_vars(trace)
    template_of = program_templates(trace)
    for index, template in enumerate(trace.templates):
        members = template_members(template_of, index)
        for step in template.steps:
            iterations = float(repeats(step, variables, members).sum())
            if not iterations:
                continue
            for compute in step.compute:
                if compute.unit == "matrix":
                    flops = (compute.count * executed_matrix_flops(chip, compute.shape) if compute.shape
                             else compute.flops)
                    matrix[compute.dtype] = matrix.get(compute.dtype, 0.0) + iterations * flops
                elif compute.unit == "vector":
                    vector[compute.dtype] = vector.get(compute.dtype, 0.0) + iterations * compute.flops
                else:
                    special += iterations * compute.flops
    used = sim.used
    return KernelActivity(
        matrix_flops=matrix, vector_flops=vector, special_ops=special,
        local_memory_bytes=used.get("local_memory", 0.0), shared_cache_bytes=used.get("shared_cache", 0.0),
        hbm_bytes=sim.hbm_bytes,
    )


def _per_flop(table: Mapping[str, float], dtype: str, field: str, fallback: str | None = None) -> float:
    energy = table.get(dtype, table.get(fallback) if fallback else None)
    if energy is None:
        raise InputError(f"no energy per flop for {dtype}; it has: {', '.join(table)}", field=field)
    return energy


def kernel_energy(power: PowerModel, activity: KernelActivity, latency_s: float, clock_hz: float,
                  chip_clock_hz: float) -> KernelEnergy:
    """The energy of ``activity`` over ``latency_s`` at ``clock_hz`` on a chip whose own clock
    (where the per-operation energies hold) is ``chip_clock_hz``."""
    scale = voltage_scale(power, clock_hz, chip_clock_hz)
    at_clock = {
        "matrix_unit": sum(flops * _per_flop(power.matrix_j_per_flop, dtype, "power.matrix_pj_per_flop")
                           for dtype, flops in activity.matrix_flops.items()),
        "vector_unit": sum(flops * _per_flop(power.vector_j_per_flop, dtype, "power.vector_pj_per_flop", "fp32")
                           for dtype, flops in activity.vector_flops.items()),
        "special_function": activity.special_ops * power.special_function_j_per_op,
        "local_memory": activity.local_memory_bytes * power.local_memory_j_per_byte,
        "shared_cache": activity.shared_cache_bytes * power.shared_cache_j_per_byte,
    }
    parts = {name: joules * scale for name, joules in at_clock.items()}
    parts["hbm"] = activity.hbm_bytes * power.hbm_j_per_byte
    parts["static"] = power.static_w * latency_s
    return KernelEnergy(joules_by_part=parts, latency_s=latency_s, clock_hz=clock_hz)


def voltage_scale(power: PowerModel, clock_hz: float, chip_clock_hz: float) -> float:
    """What an operation in the clock's domain costs at ``clock_hz``, as a share of its energy at
    the chip's clock: ``(V / V0)^2`` with ``V`` tracking the clock down to the floor."""
    voltage_clock = min(chip_clock_hz, max(clock_hz, power.floor_clock_hz))
    return (voltage_clock / chip_clock_hz) ** (power.dvfs_exponent - 1.0)


def at_clock(chip: Chip, clock_hz: float) -> Chip:
    """``chip`` with its clock at ``clock_hz``: per-cycle figures follow it, and so does a GPU's L2
    bandwidth, except where the config says the L2 keeps a clock of its own
    (``shared_cache.keeps_own_clock_above``: :meth:`~accelsim.arch.model.MemoryLevel.clock_share`);
    HBM keeps its bytes per second,
    and so does a TPU's DMA port (derived from HBM's bandwidth). Latencies and overheads are given
    in seconds and stay."""
    ratio = clock_hz / chip.clock_hz
    changes: dict = {"clock_hz": clock_hz}
    if isinstance(chip, GpuChip) and chip.shared_cache is not None:
        share = chip.shared_cache.clock_share(clock_hz, chip.clock_hz)
        changes["shared_cache"] = replace(chip.shared_cache,
                                          bandwidth_bytes_per_s=chip.shared_cache.bandwidth_bytes_per_s * share)
    if isinstance(chip, TpuChip):
        changes["local"] = replace(chip.local,
                                   fill_bandwidth_bytes_per_cycle=chip.local.fill_bandwidth_bytes_per_cycle / ratio)
    return replace(chip, **changes)


def clock_steps(chip: Chip) -> list[float]:
    """The clocks below the chip's own that DVFS may choose, highest first: the chip's clock less
    whole ``clock_step``s, down to ``min_clock`` (itself the last step)."""
    power = chip.power
    assert power is not None
    steps = []
    clock = chip.clock_hz - power.clock_step_hz
    while clock > power.min_clock_hz:
        steps.append(clock)
        clock -= power.clock_step_hz
    if power.min_clock_hz < chip.clock_hz:
        steps.append(power.min_clock_hz)
    return steps


SimulateAt = Callable[[Chip], KernelSimulation]
"""Replays the kernel on a chip (the chip at another clock)."""


def with_energy(trace: KernelTrace, chip: Chip, sim: KernelSimulation, simulate_at: SimulateAt) -> KernelSimulation:
    """``sim`` with its energy, on a chip with a power model (else as it is); under a cap that
    its power at the chip's clock passes, the replay at the highest clock step whose power fits
    (or at the lowest step if none does), with the full-clock latency beside it."""
    power = chip.power
    if power is None:
        return sim
    activity = kernel_activity(trace, chip, sim)
    sim.energy = kernel_energy(power, activity, sim.latency_s, chip.clock_hz, chip.clock_hz)
    if power.cap_w is None:
        return sim
    sim.power_cap_w = power.cap_w
    if sim.energy.average_power_w <= power.cap_w or not clock_steps(chip):
        return sim
    if power.cap_delay_s is not None and sim.latency_s <= power.cap_delay_s:
        sim.limiter_late = True
        return sim
    throttled = _highest_fitting_step(trace, chip, simulate_at, _rule_guess(chip, sim))
    throttled.power_cap_w = power.cap_w
    throttled.throttled_clock_hz = throttled.energy.clock_hz
    throttled.full_clock_latency_s = sim.latency_s
    if power.cap_delay_s is not None:
        return after_cap_delay(sim, throttled, power.cap_delay_s)
    return throttled


def after_cap_delay(full: KernelSimulation, throttled: KernelSimulation, delay_s: float) -> KernelSimulation:
    """A kernel launched from idle (``power.dvfs.boost.from_idle``) that outlasts the limiter's
    ``delay_s``: its first ``delay_s`` at the full clock, doing that share of the work, the rest at
    the throttled clock; its energy the two runs' in the same shares. Its launch overhead is
    counted once, in the throttled run's share."""
    share = delay_s / full.latency_s
    latency_s = delay_s + (1.0 - share) * throttled.latency_s
    parts = {name: share * full.energy.joules_by_part[name] + (1.0 - share) * joules
             for name, joules in throttled.energy.joules_by_part.items()}
    body_scale = (latency_s - throttled.launch_overhead_s) / (throttled.latency_s - throttled.launch_overhead_s)
    per_kernel_s = [t * body_scale for t in throttled.per_kernel_s] if throttled.per_kernel_s else None
    return replace(throttled, latency_s=latency_s, per_kernel_s=per_kernel_s,
                   energy=KernelEnergy(joules_by_part=parts, latency_s=latency_s, clock_hz=throttled.energy.clock_hz))


def first_fitting(count: int, fits: Callable[[int], bool]) -> int:
    """The first of ``count`` clock steps (highest clock first) whose power fits, by binary search
    (power falls with the clock: fewer operations per second, each at a lower voltage); the last
    step if none fits."""
    if not fits(count - 1):
        return count - 1
    return _bisect(0, count - 1, fits)


def _bisect(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The first fitting step in ``[low, high]``, ``high`` fitting."""
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


def first_fitting_near(count: int, fits: Callable[[int], bool], guess: int) -> int:
    """:func:`first_fitting`'s step, searched from ``guess`` outwards: steps doubling away from
    it until the answer is bracketed, then a binary search inside the bracket. Where power falls
    with the clock (the premise of :func:`first_fitting`) the first fitting step is one step, so
    both return it; a good guess costs two or three replays instead of a binary search's
    ``log2(count)``."""
    guess = min(max(guess, 0), count - 1)
    if fits(guess):
        low, high, stride = 0, guess, 1
        while high > 0:
            probe = max(high - stride, 0)
            if not fits(probe):
                low = probe + 1
                break
            high, stride = probe, stride * 2
    else:
        low, stride = guess + 1, 1
        while True:
            if low > count - 1:
                return count - 1
            probe = min(low + stride - 1, count - 1)
            if fits(probe):
                high = probe
                break
            low, stride = probe + 1, stride * 2
    return _bisect(low, high, fits)


def _rule_guess(chip: Chip, full: KernelSimulation) -> int:
    """The clock step the DVFS rule gives a compute-bound kernel from its run at the chip's
    clock alone (its body f0 / f as long, its clock-domain energy scaled by the voltage, HBM's
    and the launch's the same): only where :func:`first_fitting_near` starts looking."""
    power = chip.power
    assert power is not None and full.energy is not None
    parts = full.energy.joules_by_part
    clock_j = sum(parts[name] for name in CLOCK_PARTS)
    body_s = full.latency_s - full.launch_overhead_s
    steps = clock_steps(chip)
    for index, clock in enumerate(steps):
        latency_s = full.launch_overhead_s + body_s * chip.clock_hz / clock
        if latency_s > 0 and ((clock_j * voltage_scale(power, clock, chip.clock_hz) + parts["hbm"]) / latency_s
                              + power.static_w) <= power.cap_w:
            return index
    return len(steps) - 1


def _highest_fitting_step(trace: KernelTrace, chip: Chip, simulate_at: SimulateAt, guess: int) -> KernelSimulation:
    """The replay at the highest of :func:`clock_steps` whose power fits under the cap, searched
    from ``guess``."""
    power = chip.power
    steps = clock_steps(chip)
    tried: dict[int, KernelSimulation] = {}

    def replay(index: int) -> KernelSimulation:
        if index not in tried:
            slower = at_clock(chip, steps[index])
            run = simulate_at(slower)
            run.energy = kernel_energy(power, kernel_activity(trace, slower, run), run.latency_s, slower.clock_hz,
                                       chip.clock_hz)
            tried[index] = run
        return tried[index]

    return replay(first_fitting_near(len(steps), lambda i: replay(i).energy.average_power_w <= power.cap_w, guess))
