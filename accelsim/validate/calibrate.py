"""Fitting a chip's calibratable parameters to measurements.

The records are split deterministically (a hash of each record id, or of its kernel
without its config: :data:`SPLITS`) into a training set and a held-out set. Each record's kernel config is the one it names, or else the
one ``config=auto`` picks on the starting config, and stays fixed while fitting (so each evaluation only
replays traces); the fitted errors are then taken again with the configs picked on the fitted chip
(:func:`with_final_configs`), as ``validate`` predicts. Parameters the training records are not sensitive to are left
alone. The loss is a soft-L1 (pseudo-Huber) of the log error, plus a weak prior that
keeps each parameter near its published value (:data:`PRIOR_FACTOR`), minimised inside
each parameter's bounds by damped Gauss-Newton steps and then a narrow golden-section line
search per parameter (:func:`gauss_newton`), or by whole-range coordinate descent
(``method="descent"``): deterministic, and robust to a few outliers.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from accelsim.arch.clock_domains import enabled_boost
from accelsim.arch.loader import Override, load_raw, parse_override, validate, with_values
from accelsim.arch.model import Chip, load_arch, resolve
from accelsim.arch.schema import InBaseUnit
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.families.search import best_config
from accelsim.trace.kernel import KernelTrace
from accelsim.units import format_quantity, parse_quantity
from accelsim.validate.compare import Measurement, boost_on, chip_for, clocks_as_boost, record_errors, simulated_for
from accelsim.workers import mapped, worker_pool

HELD_OUT_PER_TEN = 3
MIN_INTERVAL_RECORDS = 3
"""A family's uncertainty band needs this many residuals (one gave p05 = p95)."""
LOSS_SCALE = 0.05
"""Log errors below about 5% count quadratically, larger ones linearly."""
GOLDEN = (math.sqrt(5) - 1) / 2
PRIOR_FACTOR = 2.0
"""The prior: a published value (an estimate, as a rule) is good to about this factor, so
moving a parameter this far from where it started costs the fit as much as one more
training record off by ``LOSS_SCALE``; a hundredfold move about as much as one off by 33%.
Parameters the training records determine well move anyway; ones the records cannot tell
apart (a GEMM set that a per-program overhead, a launch overhead and an efficiency explain
equally well) stay near their published values instead of running to a bound, where they
would mispredict every kernel the records do not resemble. The price: on records that
determine a value only weakly the prior wins over a small improvement (measurements
simulated with a 400 ns per-program overhead, published 100 ns, were fitted 114 ns at
0.9% MAPE; without the prior 401 ns at 0.01%). ``Fit.held_by_prior`` names such values."""


@dataclass(frozen=True)
class Parameter:
    """A calibratable config field, its search bounds and how to write its value."""

    path: str
    low: float
    high: float
    unit: str | None = None  # a dimension of accelsim.units, or None for plain numbers

    def override(self, value: float) -> str:
        """``path=value`` as the overlay writes it (and a report shows it)."""
        return f"{self.path}={self.written(value)}"

    def written(self, value: float) -> str:
        return format_quantity(value, self.unit) if self.unit else f"{value:.6g}"

    def as_written(self, value: float) -> float:
        """The number the overlay will hold for ``value`` (it writes 4 to 6 digits): what
        each evaluation simulates, so that the overlay predicts what the fit saw."""
        text = self.written(value)
        return InBaseUnit(parse_quantity(text, self.unit)) if self.unit else float(text)

    def current(self, chip: Chip) -> float | None:
        return PARAMETER_READERS[self.path](chip)


PARAMETER_READERS: dict[str, Callable[[Chip], float | None]] = {
    "matrix_unit.efficiency": lambda c: c.matrix.efficiency,
    "matrix_unit.chained_efficiency": lambda c: c.matrix.chained_efficiency,
    "vector_unit.efficiency": lambda c: c.vector.efficiency,
    "hbm.efficiency": lambda c: c.hbm.efficiency,
    "shared_cache.efficiency": lambda c: c.shared_cache.efficiency if c.shared_cache else None,
    "launch_overhead": lambda c: c.launch_overhead_s,
    "kernel_device_overhead": lambda c: c.kernel_device_overhead_s,
    "cores.program_overhead": lambda c: c.program_overhead_s,
    "hbm.latency": lambda c: c.hbm.latency_s,
    "shared_cache.latency": lambda c: c.shared_cache.latency_s if c.shared_cache else None,
    "local_memory.latency": lambda c: c.local.latency_s,
    "local_memory.fill_bandwidth_bytes_per_cycle": lambda c: c.local.fill_bandwidth_bytes_per_cycle,
    "hbm.queueing_latency": lambda c: c.hbm.queueing_latency_s,
    "hbm.queueing_unmixed_share": lambda c: c.hbm.queueing_unmixed_share,
    "hbm.turnaround_loss": lambda c: c.hbm.turnaround_loss,
}

BOOST_REFERENCE_CLOCKS = {"matrix_unit.efficiency": "matrix_reference_clock",
                          "matrix_unit.chained_efficiency": "chained_reference_clock"}


def reference_shares(arch: str, base_overrides: Sequence[str] = ()) -> dict[str, float]:
    """With ``power.dvfs.boost`` on, ``reference clock / clock`` for each matrix efficiency
    (:data:`BOOST_REFERENCE_CLOCKS`): the config writes it as a share of the peak at the clock
    its measurement ran at, and the resolved chip holds it per cycle at ``clock``
    (``docs/power.md``). Empty where the boost is off."""
    spec = with_values(validate(load_raw(arch)), [parse_override(o) for o in base_overrides])
    boost = enabled_boost(spec)
    if boost is None:
        return {}
    return {path: getattr(boost, field).value / spec.clock.value for path, field in BOOST_REFERENCE_CLOCKS.items()}


def written_values(arch: str, parameters: Sequence[Parameter], base_overrides: Sequence[str] = (),
                   family: str | None = None) -> dict[str, float]:
    """Each parameter's value on ``arch`` (with ``base_overrides``, under ``family``'s scoped
    values) as the config writes it, where the chip has one: what a fit starts from and writes
    back. The resolved chip holds the written numbers, but for the matrix efficiencies with
    the boost on: ``x`` their :func:`reference_shares` gives the written share back."""
    chip = load_arch(arch, base_overrides).for_family(family)
    values = {p.path: value for p in parameters if (value := p.current(chip)) is not None}
    for path, share in reference_shares(arch, base_overrides).items():
        if path in values:
            values[path] *= share
    return values


def within_the_peak(arch: str, parameters: Sequence[Parameter], base_overrides: Sequence[str] = ()) -> list[Parameter]:
    """``parameters`` with the ranges the chip allows: with the boost on, a matrix efficiency
    may not pass its :func:`reference_shares` (the pipe at its peak at ``clock``), which a probe
    of the range's top would otherwise ask for."""
    shares = reference_shares(arch, base_overrides)
    bounded = []
    for p in parameters:
        limit = shares.get(p.path, math.inf)
        if limit < p.high:  # a hair below it, so the overlay's 6 written digits cannot round past it
            p = replace(p, high=limit * (1 - 1e-5))
        bounded.append(p)
    return bounded


DEFAULT_PARAMETERS = (
    Parameter("matrix_unit.efficiency", 0.3, 1.0),
    Parameter("matrix_unit.chained_efficiency", 0.2, 1.0),
    Parameter("vector_unit.efficiency", 0.2, 1.0),
    Parameter("hbm.efficiency", 0.4, 1.0),
    Parameter("shared_cache.efficiency", 0.3, 1.0),
    Parameter("launch_overhead", 0.0, 20e-6, "seconds"),
    Parameter("cores.program_overhead", 0.0, 5e-6, "seconds"),
)
FITTABLE_PARAMETERS = (*DEFAULT_PARAMETERS, Parameter("hbm.queueing_latency", 0.0, 5e-6, "seconds"),
                       Parameter("hbm.queueing_unmixed_share", 0.0, 1.0), Parameter("hbm.turnaround_loss", 0.0, 0.5),
                       Parameter("hbm.latency", 50e-9, 3e-6, "seconds"),
                       Parameter("shared_cache.latency", 20e-9, 1e-6, "seconds"),
                       Parameter("local_memory.latency", 1e-9, 200e-9, "seconds"),
                       Parameter("local_memory.fill_bandwidth_bytes_per_cycle", 8.0, 1024.0),
                       Parameter("kernel_device_overhead", 0.0, 2e-6, "seconds"))
"""What ``--fit`` may name: the defaults; HBM queueing, which only kernels bound by loads
in flight at a high HBM load see (``validation/stream_occupancy/``), and the share of it
read-only traffic sees (only a set with read-only and mixed kernels tells it); the turnaround
loss, which only a set with both read-only or write-only and mixed kernels can tell
apart from ``hbm.efficiency``; and the latencies and a core's port bandwidth, which only
kernels bound by loads in flight or by few programs (pointer chases, decode steps, small
grids) tell apart; a kernel's device-side fixed time, which only device-timed records (a
profiler's kernel interval: tiny kernels, a CUDA graph's period) see, bounded by the
smallest published launch overhead (2 us) that it is part of. Every field
``calibratable_paths()`` lists but ``interconnect.latency`` (which no kernel waits: collectives
fit with ``calibrate --system``)."""


def is_held_out(record_id: str) -> bool:
    return zlib.crc32(record_id.encode()) % 10 < HELD_OUT_PER_TEN


SPLITS = ("record", "kernel")
"""How records are split: ``record``, each by a hash of its id (the default); ``kernel``,
every record of one kernel (family, implementation and parameters: its configs, say, in
a tile sweep) by a hash of that, so a held-out kernel was never seen at any config."""


def kernel_key(m: Measurement) -> str:
    """A record's kernel without its config: what ``--split-by kernel`` hashes."""
    params = ",".join(f"{k}={m.params[k]}" for k in sorted(m.params))
    return f"{m.family}|{m.implementation}|{params}"


NO_SPLIT = "none"
"""Hold nothing out: a fit on every record given (leave-one-source-out holds out whole sources instead)."""


def holds_out(m: Measurement, split: str = "record") -> bool:
    """Whether ``m`` falls in the held-out split under ``split`` (:data:`SPLITS`, or
    :data:`NO_SPLIT`)."""
    if split == NO_SPLIT:
        return False
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return is_held_out(m.id if split == "record" else kernel_key(m))


@dataclass
class Case:
    """One measurement with its (fixed) kernel trace."""

    measurement: Measurement
    trace: KernelTrace
    config: dict


@dataclass
class Fit:
    arch: str
    values: dict[str, float]
    """Fitted value per parameter path (only the ones fitted)."""
    start: dict[str, float]
    skipped: list[str]
    train: list[Case]
    held_out: list[Case]
    train_errors: np.ndarray
    held_out_errors: np.ndarray
    start_train_errors: np.ndarray
    start_held_out_errors: np.ndarray
    evaluations: int
    overrides: list[str] = field(default_factory=list)
    held_by_prior: list[str] = field(default_factory=list)
    """Fitted parameters the training records hardly determine: moving one by
    sqrt(PRIOR_FACTOR) either way changes their loss less than it changes the prior's, so
    the prior (the published value) holds it where it is, not the records."""
    at_bound: list[str] = field(default_factory=list)
    """Parameters the fit left at a search bound: the records asked for more than the
    model allows, and the overlay is unlikely to predict other kernels well."""


def with_final_configs(result: Fit, arch: str, base_overrides: Sequence[str] = (), jobs: int = 1) -> Fit:
    """``result`` with its fitted errors taken again as ``validate`` predicts on the fitted
    chip: a record that names no config runs the one ``config=auto`` picks there (the fit
    kept the start's picks, so each evaluation only replayed traces). Its notes' MAPE and
    the ``uncertainty`` band then describe what the overlay predicts."""
    final = [*base_overrides, *result.overrides]
    cases = prepare([c.measurement for c in (*result.train, *result.held_out)], arch, final, jobs)
    # the fit's own split, by position (prepare keeps the order; worker processes return copies)
    train, held_out = cases[:len(result.train)], cases[len(result.train):]
    return replace(result, train=train, held_out=held_out, train_errors=errors(train, arch, final),
                   held_out_errors=errors(held_out, arch, final) if held_out else np.array([]))


def prepare(measurements: Sequence[Measurement], arch: str, base_overrides: Sequence[str] = (),
            jobs: int = 1) -> list[Case]:
    """Each record's case: its named config, or the one ``config=auto`` picks; in ``jobs``
    worker processes when more than one (the same cases, in order)."""
    with mapped(_prepare_one, measurements, jobs, _init_prepare, (arch, tuple(base_overrides))) as cases:
        return list(cases)


_PREPARE: dict = {}


def _init_prepare(arch: str, overrides: tuple[str, ...]) -> None:
    _PREPARE.update(arch=arch, overrides=overrides, chips={})


def _prepare_one(m: Measurement) -> Case:
    family = get_family(m.family)
    chip = chip_for(m, _PREPARE["arch"], _PREPARE["overrides"], _PREPARE["chips"]).for_family(family.name)
    with record_errors(m):
        params = parse_values(family.params, m.params)
    with record_errors(m):
        if m.config is not None:
            config = family.resolve_config(params, m.config, chip)
            return Case(m, family.build(params, config, chip), config)
        best = best_config(family, params, chip).best
    return Case(m, best.trace, best.config)


def errors(cases: Sequence[Case], arch: str, overrides: Sequence[str]) -> np.ndarray:
    """Log errors (log predicted - log measured) of ``cases`` on ``arch`` with ``overrides``
    (and each record's conditions)."""
    chips: dict = {}
    return np.array([_log_error(c, chip_for(c.measurement, arch, overrides, chips)) for c in cases])


def _log_error(case: Case, chip: Chip) -> float:
    return math.log(simulated_for(case.measurement, simulate_kernel(case.trace, chip), chip) / case.measurement.latency_s)


class FitChips:
    """The chips a fit evaluates: ``arch`` read and validated once, with ``base_overrides``
    (the command's ``--set``); each evaluation's values, then each record's conditions and
    the clock it ran at (:meth:`Measurement.overrides_on`), are applied to that spec object
    (:func:`~accelsim.arch.loader.with_values`), as ``load_arch`` applies them to the file
    (the same chips, several times faster). One chip per record conditions for the values
    seen last."""

    def __init__(self, arch: str, base_overrides: Sequence[str] = ()) -> None:
        self.arch, self.base_overrides = arch, tuple(base_overrides)
        self.spec = validate(load_raw(arch))
        self.base = [parse_override(text) for text in base_overrides]
        self.boosted = boost_on(resolve(with_values(self.spec, self.base)))
        self.key: tuple | None = None
        self.chips: dict[tuple[str, ...], Chip] = {}

    def chip(self, measurement: Measurement, values: Mapping[str, float]) -> Chip:
        key = tuple(values.items())
        if key != self.key:
            self.key, self.chips = key, {}
        conditions = clocks_as_boost(measurement.overrides_on(self.base_overrides)[len(self.base_overrides):],
                                     self.boosted)
        if conditions not in self.chips:
            self.chips[conditions] = self._chip([
                *self.base, *(Override(tuple(path.split(".")), value, f"{path} (calibration)")
                              for path, value in values.items()),
                *(parse_override(text) for text in conditions)])
        return self.chips[conditions]

    def _chip(self, overrides: Sequence[Override]) -> Chip:
        chip = resolve(with_values(self.spec, overrides))
        if not self.spec.family_values:
            return chip
        return replace(chip, family_chips=MappingProxyType({
            family: resolve(with_values(with_values(self.spec, [
                Override(tuple(path.split(".")), value.value, f"family_values.{family}.{path}")
                for path, value in scoped.items()]), overrides))
            for family, scoped in self.spec.family_values.items()}))


def fit_errors(chips: FitChips, cases: Sequence[Case], values: Mapping[str, float]) -> np.ndarray:
    """Log errors of ``cases`` on the chips of a fit with ``values``."""
    return np.array([_log_error(c, chips.chip(c.measurement, values)) for c in cases])


_WORKER: dict = {}
"""A calibration worker process's cases and the chips of its fit (:class:`FitChips`)."""


def _init_worker(cases: Sequence[Case], arch: str, base_overrides: tuple[str, ...]) -> None:
    _WORKER.update(cases=cases, chips=FitChips(arch, base_overrides))


def _worker_error(task: tuple[int, tuple[tuple[str, float], ...]]) -> float:
    index, values = task
    case = _WORKER["cases"][index]
    return _log_error(case, _WORKER["chips"].chip(case.measurement, dict(values)))


class Evaluator:
    """The log errors of subsets of ``cases`` on ``arch`` with ``base_overrides`` and a fit's
    values (path -> number, as the overlay writes it), here or spread over ``jobs`` worker
    processes (each case simulated whole in one worker: the same numbers, in the same
    order); :func:`errors` with the values as overrides, without their text."""

    def __init__(self, cases: Sequence[Case], arch: str, jobs: int = 1, base_overrides: Sequence[str] = ()) -> None:
        self.chips = FitChips(arch, base_overrides)
        self.index = {id(c): i for i, c in enumerate(cases)}
        self.pool = None
        if jobs > 1:
            self.pool = worker_pool(min(jobs, len(cases)), _init_worker, (list(cases), arch, tuple(base_overrides)))

    def __call__(self, cases: Sequence[Case], values: Mapping[str, float]) -> np.ndarray:
        if self.pool is None or len(cases) < 2:
            return fit_errors(self.chips, cases, values)
        tasks = [(self.index[id(c)], tuple(values.items())) for c in cases]
        return np.array(list(self.pool.map(_worker_error, tasks)))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def loss(log_errors: np.ndarray) -> float:
    return float(np.sum(LOSS_SCALE**2 * (np.sqrt(1 + (log_errors / LOSS_SCALE) ** 2) - 1)))


def prior_residuals(values: dict[str, float], start: dict[str, float]) -> np.ndarray:
    """Each parameter's log distance from its starting value in units of ``PRIOR_FACTOR``,
    as a record's log error of ``LOSS_SCALE`` per unit. Parameters that start at 0 have none."""
    return np.array([
        (math.log(max(values[path], 1e-3 * begin)) - math.log(begin)) / math.log(PRIOR_FACTOR) * LOSS_SCALE
        for path, begin in start.items() if begin > 0 and path in values
    ])


def prior_loss(values: dict[str, float], start: dict[str, float]) -> float:
    """The prior's share of the fit's loss (:func:`prior_residuals`, scored as records are)."""
    return loss(prior_residuals(values, start))


def fit(
    cases: Sequence[Case],
    arch: str,
    parameters: Sequence[Parameter] = DEFAULT_PARAMETERS,
    *,
    sweeps: int = 10,
    base_overrides: Sequence[str] = (),
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
    family: str | None = None,
    method: str = "gauss-newton",
    split: str = "record",
) -> Fit:
    """Fit ``parameters`` on the training split of ``cases``; ``jobs`` worker processes
    simulate the records of each evaluation in parallel (the result does not depend on it).
    ``progress`` is given a line after each parameter's line search (sweep, value, loss,
    evaluations so far, minutes). ``family``: a fit to be scoped to that kernel family
    starts from (and its prior stays near) the value the chip gives that family, which a
    calibrated chip's ``family_values`` may already set. ``method``: ``gauss-newton``
    (:func:`gauss_newton`, then one narrow line search per parameter) or ``descent``
    (:func:`coordinate_descent` over each parameter's whole range: several times the
    evaluations; the method of the overlays fitted before 2026-12-01), whose sweeps ``sweeps``
    bounds (the Gauss-Newton steps stop by themselves)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    evaluate = Evaluator(cases, arch, jobs, base_overrides)
    try:
        return _fit(cases, arch, parameters, sweeps, base_overrides, evaluate, progress, family, method, split)
    finally:
        evaluate.close()


METHODS = ("gauss-newton", "descent")


def _fit(cases, arch, parameters, sweeps, base_overrides, evaluate: Evaluator, progress=None, family=None,
         method: str = "gauss-newton", split: str = "record") -> Fit:
    train = [c for c in cases if not holds_out(c.measurement, split)]
    held_out = [c for c in cases if holds_out(c.measurement, split)]
    if not train:
        raise ValueError("no training records: every record fell in the held-out split")
    parameters = within_the_peak(arch, parameters, base_overrides)
    start = written_values(arch, parameters, base_overrides, family)
    active = [p for p in parameters if p.path in start]
    evaluations = 0

    def applied(values: dict[str, float]) -> dict[str, float]:
        """What an evaluation simulates: each value as the overlay will hold it."""
        by_path = {p.path: p for p in active}
        return {k: by_path[k].as_written(v) for k, v in values.items()}

    def train_loss(values: dict[str, float]) -> float:
        nonlocal evaluations
        evaluations += 1
        return loss(evaluate(train, applied(values))) + prior_loss(values, start)

    skipped = [p.path for p in active if not _sensitive(p, active, start, train, evaluate, applied)]
    free = [p for p in active if p.path not in skipped]
    began = time.monotonic()

    def report(sweep: int, p: Parameter, value: float, best: float) -> None:
        if progress is not None:
            progress(f"sweep {sweep}: {p.override(value)}, training loss {best:.4g} "
                     f"({evaluations} evaluations, {(time.monotonic() - began) / 60:.1f} min)")

    if method == "descent":
        values = coordinate_descent(train_loss, free, start, sweeps, on_step=report)
    else:
        def train_residuals(values: dict[str, float]) -> np.ndarray:
            nonlocal evaluations
            evaluations += 1
            return np.concatenate([evaluate(train, applied(values)), prior_residuals(values, start)])

        def report_step(step: int, best: float) -> None:
            if progress is not None:
                progress(f"step {step}: training loss {best:.4g} ({evaluations} evaluations, "
                         f"{(time.monotonic() - began) / 60:.1f} min)")

        values = gauss_newton(train_residuals, free, start, on_step=report_step)
        # then one line search per parameter in a narrow bracket around it: kinks (a
        # bound that changes, a tile that stops fitting) can stall the steps short of it
        values = coordinate_descent(train_loss, free, values, 1, on_step=report, bracket=POLISH_BRACKET)
    # a parameter the search left where it started was not fitted
    fitted = {p.path: values[p.path] for p in free if not math.isclose(values[p.path], start[p.path], rel_tol=1e-3)}
    final = applied(values)
    data_loss = loss(evaluate(train, final))
    held_by_prior = []
    for p in free:
        if p.path not in fitted:
            continue
        step = math.sqrt(PRIOR_FACTOR)
        moved = [min(p.high, max(p.low, values[p.path] * f)) for f in (step, 1 / step)]
        rises = [(loss(evaluate(train, applied({**values, p.path: v}))) - data_loss,
                  prior_loss({**values, p.path: v}, start) - prior_loss(values, start)) for v in moved]
        if all(data_rise < abs(prior_rise) for data_rise, prior_rise in rises):
            held_by_prior.append(p.path)
    at_bound = [p.path for p in free if p.path in fitted
                and (math.isclose(values[p.path], p.low, rel_tol=1e-2) or math.isclose(values[p.path], p.high, rel_tol=1e-2))]
    return Fit(
        arch=arch,
        values=fitted,
        start={k: start[k] for k in fitted},
        skipped=skipped,
        train=train,
        held_out=held_out,
        train_errors=evaluate(train, final),
        held_out_errors=evaluate(held_out, final) if held_out else np.array([]),
        start_train_errors=evaluate(train, {}),
        start_held_out_errors=evaluate(held_out, {}) if held_out else np.array([]),
        evaluations=evaluations,
        overrides=[p.override(values[p.path]) for p in active if p.override(values[p.path]) not in base_overrides],
        held_by_prior=held_by_prior,
        at_bound=at_bound,
    )


def _sensitive(p: Parameter, active: Sequence[Parameter], values: dict, cases, evaluate, applied) -> bool:
    """Does moving the parameter across its range change any training prediction, with the
    others where they start or, failing that, at their high ends (a share of an HBM
    queueing that starts at zero matters only once the queueing does)?"""
    others_high = {**values, **{q.path: q.high for q in active if q.path != p.path}}
    for point in (values, others_high):
        low = evaluate(cases, applied({**point, p.path: p.low + 0.1 * (p.high - p.low)}))
        high = evaluate(cases, applied({**point, p.path: p.high}))
        if np.max(np.abs(high - low)) > 1e-3:
            return True
    return False


def coordinate_descent(train_loss: Callable[[dict[str, float]], float], parameters: Sequence,
                       start: dict[str, float], sweeps: int, on_step: Callable | None = None,
                       bracket: float | None = None) -> dict[str, float]:
    """Minimise ``train_loss`` over ``parameters`` (each with ``path``, ``low``, ``high``)
    from ``start``: a golden-section line search per parameter in turn, until a sweep
    gains under 0.1% or ``sweeps`` run out. Returns the best values seen. ``on_step(sweep,
    parameter, value, loss)`` is called after each line search with where it left them.
    ``bracket``: search only this fraction of each range either side of the current value
    (with fewer steps: the same resolution), not the whole range."""
    values = dict(start)
    best = train_loss(values)
    for sweep in range(1, sweeps + 1):
        before = best
        for p in parameters:
            low, high, steps = p.low, p.high, GOLDEN_STEPS
            if bracket is not None:
                half = bracket * (p.high - p.low)
                centre = min(p.high, max(p.low, values[p.path]))  # a --set start may lie outside
                low, high = max(p.low, centre - half), min(p.high, centre + half)
                if not high > low:
                    continue
                steps = max(4, GOLDEN_STEPS - round(math.log((p.high - p.low) / (high - low)) / -math.log(GOLDEN)))
            value, result = _golden_section(lambda x, p=p: train_loss({**values, p.path: x}), low, high,
                                            values[p.path], best, steps)
            if result < best:
                values[p.path], best = value, result
            if on_step is not None:
                on_step(sweep, p, values[p.path], best)
        if before - best <= 1e-3 * before:
            break
    return values


GOLDEN_STEPS = 14
"""Golden-section steps over a parameter's whole range: its width times 0.618^14, 0.1%."""
POLISH_BRACKET = 0.05
"""After the Gauss-Newton steps, each parameter is searched again within 5% of its range
either side."""
GN_STEPS = 20
GN_DIFF = 0.1
"""Forward-difference step, as a fraction of a parameter's range."""
GN_TRIES = 5
"""Damping increases tried per step before the steps stop."""


def gauss_newton(residuals: Callable[[dict[str, float]], np.ndarray], parameters: Sequence,
                 start: dict[str, float], on_step: Callable | None = None) -> dict[str, float]:
    """Minimise ``loss(residuals(values))`` (the robust loss of a residual vector) over
    ``parameters`` inside their bounds from ``start``: Levenberg-Marquardt steps on the
    iteratively reweighted least-squares form of the pseudo-Huber loss, with a
    forward-difference Jacobian in units of each parameter's range (one evaluation per
    parameter per step). A step that does not lower the loss is retried with more damping;
    the steps stop when one gains under 0.01% or none of ``GN_TRIES`` helps. Deterministic.
    ``on_step(step, loss)`` is called after each accepted step."""
    paths = [p.path for p in parameters]
    low = np.array([p.low for p in parameters])
    span = np.array([p.high - p.low for p in parameters])

    def at(u: np.ndarray) -> dict[str, float]:
        return {**start, **{path: float(low[i] + span[i] * u[i]) for i, path in enumerate(paths)}}

    u = np.array([(start[path] - low[i]) / span[i] for i, path in enumerate(paths)])
    r = residuals(at(u))
    best = loss(r)
    damping = 1e-3
    for step in range(1, GN_STEPS + 1):
        jacobian = np.empty((len(r), len(paths)))
        for j in range(len(paths)):
            h = GN_DIFF if u[j] + GN_DIFF <= 1 else -GN_DIFF  # stay inside the range
            moved = u.copy()
            moved[j] += h
            jacobian[:, j] = (residuals(at(moved)) - r) / h
        weight = 1 / np.sqrt(1 + (r / LOSS_SCALE) ** 2)  # pseudo-Huber as reweighted least squares
        normal = jacobian.T @ (weight[:, None] * jacobian)
        gradient = jacobian.T @ (weight * r)
        diagonal = np.diag(normal).copy()
        diagonal[diagonal <= 0] = 1e-12
        for _ in range(GN_TRIES):
            delta = _bounded_step(normal + damping * np.diag(diagonal), gradient, u)
            trial = np.clip(u + delta, 0.0, 1.0)
            if np.allclose(trial, u, atol=1e-9, rtol=0):
                damping *= 4
                continue
            trial_r = residuals(at(trial))
            trial_loss = loss(trial_r)
            if math.isfinite(trial_loss) and trial_loss < best:
                break
            damping *= 4
        else:
            break
        gain = best - trial_loss
        u, r, best = trial, trial_r, trial_loss
        damping = max(damping / 3, 1e-9)
        if on_step is not None:
            on_step(step, best)
        if gain <= 1e-4 * best:
            break
    return at(u)


def _bounded_step(matrix: np.ndarray, gradient: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The damped Gauss-Newton step, with the parameters that sit at a bound and would step
    out of it held there (solved without them), so that clipping does not undo what the
    others' step assumed."""
    free = np.ones(len(u), dtype=bool)
    for _ in range(len(u)):
        delta = np.zeros(len(u))
        if free.any():
            delta[free] = np.linalg.solve(matrix[np.ix_(free, free)], -gradient[free])
        outward = free & (((u <= 0.0) & (delta < 0)) | ((u >= 1.0) & (delta > 0)))
        if not outward.any():
            return delta
        free &= ~outward
    return np.zeros(len(u))


def _golden_section(f, low: float, high: float, current: float, current_value: float, steps: int = GOLDEN_STEPS):
    """Minimise ``f`` on [low, high]; returns the best point seen (the current one included)."""
    a, b = low, high
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    best = min([(current_value, current), (fc, c), (fd, d)])
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = f(c)
            best = min(best, (fc, c))
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = f(d)
            best = min(best, (fd, d))
    return best[1], best[0]


def intervals(cases: Sequence[Case], log_errors: np.ndarray) -> dict[str, tuple[float, float, int]]:
    """Per family: 5th and 95th percentile of relative error, and the record count."""
    by_family: dict[str, list[float]] = {}
    for case, e in zip(cases, log_errors):
        by_family.setdefault(case.measurement.family, []).append(math.expm1(e))
    return {
        family: (float(np.percentile(errs, 5)), float(np.percentile(errs, 95)), len(errs))
        for family, errs in sorted(by_family.items())
    }


def mape(log_errors: np.ndarray) -> float:
    return float(np.mean(np.abs(np.expm1(log_errors)))) if len(log_errors) else math.nan
