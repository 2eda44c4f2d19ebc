"""Predicted vs measured: read measurement files (``docs/measurement-format.md``),
simulate each record's kernel on its chip, and summarise the errors.

A record's kernel is simulated with ``config=auto`` (the best config of the family's
space), since the measured kernels were autotuned or vendor-tuned, unless
``search=False``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from accelsim.arch.model import Chip, load_arch
from accelsim.engine.chip import KernelSimulation
from accelsim.errors import InputError, read_json_file, shown
from accelsim.families import FAMILIES, get_family
from accelsim.families.base import parse_values
from accelsim.families.search import best_config, run_config
from accelsim.results import relative_error
from accelsim.units import MEASURED_RANGE, is_finite_number, is_measured_time
from accelsim.workers import mapped


@dataclass(frozen=True)
class Measurement:
    id: str
    arch: str
    family: str
    implementation: str
    params: dict[str, Any]
    latency_s: float
    source: str
    file: str
    config: dict[str, Any] | None = None
    """The kernel config that ran, when the record says (our own tunable kernels)."""
    conditions: tuple[str, ...] = ()
    """How the device ran that its config does not say (a locked SM clock, say), as
    ``--set`` overrides (``clock=1500 MHz``): the record is predicted on its chip with
    them applied last (:func:`chip_for`)."""
    ran_at_clock: str | None = None
    """The SM clock the device was read to run at during the timing (``sm_clock_mhz``'s
    median, as an override: ``clock=1980 MHz``): applied after the conditions when neither
    they nor the command's ``--set`` name a clock (:meth:`overrides_on`)."""
    kernel_device_s: tuple[tuple[str, float], ...] = ()
    """Measured files: each kernel one call launched, in order, with its device time
    (``kernel_device_s``), for :func:`kernel_rows`."""
    latency_kind: str = "launches"
    """What ``latency_s`` holds (:data:`LATENCY_KINDS`): ``launches``, each kernel with its launch
    as back-to-back or event-bracketed calls have it (the simulator's latency, launch
    overhead included); ``device``, kernel execution alone (a profiler's device time,
    launch gaps excluded), compared with the simulated latency less its launch overhead."""
    informs: tuple[str, ...] = ()
    """Config paths of its chip whose published value was derived from this record (the H200
    STREAM ``init`` record set ``hbm.efficiency``): the record checks nothing there."""
    flushed_cache: str | None = None
    """What the timing tool's cache flush (the record's ``cache_flush``) left in the L2 at
    each timed call's start, as an override (``shared_cache.dirty_at_start=268435456 B``
    after a flush by writing 256 MiB): applied last, where neither the command's ``--set``
    nor the record's conditions say it."""

    def overrides_on(self, overrides: Sequence[str]) -> tuple[str, ...]:
        """The command's ``overrides``, then the record's conditions, then the clock it ran
        at where neither of those sets one (:meth:`read_clock_applies`), then the L2 its
        timing tool's flush left, likewise."""
        given = (*overrides, *self.conditions)
        out = (*given, self.ran_at_clock) if self.read_clock_applies(overrides) else given
        if self.flushed_cache is not None and not _sets(given, self.flushed_cache.split("=", 1)[0]):
            out = (*out, self.flushed_cache)
        return out

    def read_clock_applies(self, overrides: Sequence[str]) -> bool:
        """Whether the record is predicted at the clock read while it was timed: it has one,
        and neither ``overrides`` nor its conditions set a clock (``clock``, or with the boost
        on, where ``--set clock=`` is refused, ``power.dvfs.boost.clock``)."""
        given = (*overrides, *self.conditions)
        return self.ran_at_clock is not None and not _sets(given, "clock") and not _sets(given, BOOST_CLOCK)


BOOST_CLOCK = "power.dvfs.boost.clock"


def _sets(overrides: Sequence[str], path: str) -> bool:
    """Whether one of ``overrides`` (``path=value``) sets ``path``."""
    return any(o.split("=", 1)[0].strip() == path for o in overrides)


LATENCY_KINDS = ("launches", "device")


class ConditionsError(InputError):
    """A record's conditions that its chip, with the command's overrides, refuses: an error
    of the record, never a config the simulator refuses (:class:`Refused`)."""


def chip_for(measurement: Measurement, arch: str, overrides: Sequence[str], cache: dict) -> Chip:
    """``arch`` with ``overrides`` and then the record's :attr:`Measurement.conditions` (and
    the clock it ran at, :meth:`Measurement.overrides_on`), one chip per distinct set in ``cache``."""
    key = (arch, _clocks_as_boost(measurement.overrides_on(overrides), arch, overrides, cache))
    if key not in cache:
        try:
            cache[key] = load_arch(arch, list(key[1]))
        except InputError as exc:
            if not measurement.conditions and not measurement.ran_at_clock and not measurement.flushed_cache:
                raise
            given = f" with {' '.join(overrides)}" if overrides else ""
            raise ConditionsError(_refused_conditions(exc, f"its conditions on {arch}{given}"), source=measurement.file,
                                  field=f"record {shown(measurement.id)}: conditions") from None
    return cache[key]


def _clocks_as_boost(given: tuple[str, ...], arch: str, overrides: Sequence[str], cache: dict) -> tuple[str, ...]:
    """``given`` with a record's clock (a lock in its conditions, or the clock read while it ran)
    set as the boost clock where the command's chip has the boost on (``power.dvfs.boost``,
    ``docs/power.md``): there ``clock`` is the clock the peaks are quoted at and the boost clock
    the one kernels run at, at most. The command's own overrides are kept as written."""
    base_key = (arch, tuple(overrides))
    if base_key not in cache:
        cache[base_key] = load_arch(arch, list(overrides))
    return (*given[:len(overrides)], *clocks_as_boost(given[len(overrides):], boost_on(cache[base_key])))


def boost_on(chip: Chip) -> bool:
    """Whether ``chip`` runs each kernel at its own clock under the cap (``power.dvfs.boost``)."""
    power = getattr(chip, "power", None)  # a system has none of its own
    return power is not None and power.boost_clock_hz is not None


def clocks_as_boost(record_part: Sequence[str], boosted: bool) -> tuple[str, ...]:
    """A record's overrides with a ``clock`` in them set as ``power.dvfs.boost.clock`` where
    ``boosted`` (:func:`boost_on`): there a record's clock is the one its kernels run at,
    at most, and ``clock`` stays the clock the peaks are quoted at."""
    if not boosted:
        return tuple(record_part)
    return tuple(f"{BOOST_CLOCK}={o.split('=', 1)[1]}" if _sets((o,), "clock") else o for o in record_part)


def _refused_conditions(exc: InputError, where: str) -> str:
    """The config loader's refusal of a record's conditions, as the record's error's text."""
    return f"{exc.field + ': ' if exc.field else ''}{exc.message} ({where})"


def launch_inside_s(chip: Chip) -> float:
    """The part of a kernel's launch inside its own device interval: the chip's
    ``kernel_device_overhead``, at most the whole launch (a fit may take
    ``launch_overhead`` below it)."""
    return min(chip.kernel_device_overhead_s, chip.launch_overhead_s)


def simulated_for(measurement: Measurement, sim: KernelSimulation, chip: Chip) -> float:
    """The simulated latency as the record timed it (:attr:`Measurement.latency_kind`): a
    device timing leaves the launch out but holds each kernel's device-side part of it
    (:func:`launch_inside_s`)."""
    if measurement.latency_kind != "device":
        return sim.latency_s
    return sim.latency_s - sim.launch_overhead_s + sim.kernels * launch_inside_s(chip)


@dataclass(frozen=True)
class Comparison:
    measurement: Measurement
    predicted_s: float
    bound: str
    config: dict[str, Any]
    flops: float = 0.0
    hbm_bytes: float = 0.0
    """Of the simulated kernel: where it sits on a roofline."""
    per_kernel_s: tuple[float, ...] = ()
    """Each simulated kernel's device time: its programs' span and the chip's
    ``kernel_device_overhead``, the rest of the launch left out (one entry for a one-kernel trace)."""
    clock_hz: float = 0.0
    """The clock the record was predicted at."""
    at_read_clock: bool = False
    """Predicted at the clock read while the record was timed (``sm_clock_mhz``), which neither
    its conditions nor the command's ``--set`` overrode."""

    @property
    def error(self) -> float:
        """Signed relative error of the prediction: predicted / measured - 1."""
        return relative_error(self.predicted_s, self.measurement.latency_s)


def read_measurements(paths: Iterable[str | Path]) -> list[Measurement]:
    """Every record of the given files (or of the ``*.json`` files under given folders);
    ``microbenchmarks`` files (``validation/measure_micro.py``) hold no kernel records and
    are passed over."""
    out: list[Measurement] = []
    seen: dict[tuple[str, str], str] = {}  # (arch, id) -> the file that had it
    checked: set[tuple[str, tuple[str, ...]]] = set()  # (arch, conditions) that load
    for path in measurement_files(paths):
        data = read_json_file(path, "measurements")
        if not isinstance(data, dict):
            raise InputError(f"expected a JSON object, got {type(data).__name__}", source=str(path))
        if data.get("kind") == "microbenchmarks":
            continue  # the memory system's numbers, for configs to cite: not kernel records
        step = data.get("kind") == MEASURED_STEP
        if data.get("kind") not in ("measurements", MEASURED_STEP) or data.get("schema_version") != 1:
            raise InputError(f"expected kind 'measurements' (or '{MEASURED_STEP}') and schema_version 1",
                             source=str(path))
        _check_header(data, path, one_family=not step)
        arch = data["device"]["arch"]
        records = data.get("records", [])
        if not isinstance(records, list):
            raise InputError("expected a list of records", source=str(path), field="records")
        ids: set[str] = set()
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise InputError("expected a record object", source=str(path), field=f"records[{i}]")
            record_id = record.get("id")
            if not isinstance(record_id, str) or not record_id.strip():  # the split hashes it: never a default
                raise InputError(f"expected a record id (a non-empty string), got {shown(record_id)}", source=str(path),
                                 field=f"records[{i}].id")
            if record_id in ids:  # the held-out split and the reports key records by id
                raise InputError(f"duplicate record id {shown(record_id)}", source=str(path), field=f"records[{i}].id")
            ids.add(record_id)
            if (arch, record_id) in seen:  # a file given twice, or under a folder also given
                raise InputError(f"record id {shown(record_id)} of {arch} is also in {seen[arch, record_id]} (a file "
                                 "given twice?)", source=str(path), field=f"records[{i}].id")
            seen[arch, record_id] = str(path)
            _check_informational(record, path, f"records[{i}]")
            family = _known_family(record.get("family", data.get("family")), path, f"records[{i}].family")
            if not arch or family not in FAMILIES:  # no config for the device, or collectives
                continue
            out.append(Measurement(
                id=record_id, arch=arch, family=family,
                implementation=str(record.get("implementation", "")),
                params=_mapping(record.get("params"), path, f"records[{i}].params"),
                latency_s=_latency(record.get("latency_s"), path, f"records[{i}].latency_s"),
                source=str(record.get("source", "")), file=str(path),
                config=dict(record["config"]) if isinstance(record.get("config"), dict) else None,
                conditions=_conditions(record, arch, path, f"records[{i}].conditions", checked),
                ran_at_clock=_ran_at_clock(record, arch, path, f"records[{i}].sm_clock_mhz", checked),
                kernel_device_s=_kernel_device_s(record, path, f"records[{i}].kernel_device_s"),
                latency_kind=_latency_kind(record.get("latency_kind", LATENCY_KINDS[0]), path,
                                           f"records[{i}].latency_kind"),
                informs=_informs(record, path, f"records[{i}].informs"),
                flushed_cache=_flushed_cache(record, arch, path, f"records[{i}].cache_flush", checked),
            ))
    return out


FILE_FAMILIES = (*FAMILIES, "collective")
"""Families a measurement file may hold: the kernel families, and collectives (read by
``validation/report_collectives.py``, passed over here)."""
PROVENANCE_KEYS = ("date", "command", "versions", "clocks", "source")


MEASURED_STEP = "measured_step"
"""A profiled run (``accelsim import profile``): records of several families, each naming its own."""


def _check_header(data: dict, path: Path, *, one_family: bool = True) -> None:
    """The top level every measurement file has (``docs/measurement-format.md``): a known
    family (a measured step's records each name theirs), the device with its accelsim
    config name (or null), and where it came from."""
    if one_family:
        _known_family(data.get("family"), path, "family")
    device = data.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("arch", 0), str | None):
        raise InputError("expected an object with 'arch' (the accelsim config name, or null)",
                         source=str(path), field="device")
    provenance = data.get("provenance")
    if not isinstance(provenance, dict) or any(key not in provenance for key in PROVENANCE_KEYS):
        raise InputError(f"expected an object with {', '.join(PROVENANCE_KEYS)} (where the measurements came "
                         "from)", source=str(path), field="provenance")


def _check_informational(record: dict, path: Path, where: str) -> None:
    """Fields validate does not use but a report shows: ``flops`` and ``bytes`` are
    numbers of 0 or more, ``measured`` a boolean."""
    for key in ("flops", "bytes"):
        value = record.get(key)
        if value is not None and (not is_finite_number(value) or value < 0):
            raise InputError(f"expected a number of 0 or more, got {json.dumps(value)}", source=str(path),
                             field=f"{where}.{key}")
    if "measured" in record and not isinstance(record["measured"], bool):
        raise InputError(f"expected true or false, got {json.dumps(record['measured'])}", source=str(path),
                         field=f"{where}.measured")


CONDITION_PATH = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)*")
NOT_CONDITIONS = ("schema_version", "kind", "extends", "name", "aliases", "display_name", "description")
"""Top-level config fields that say which chip a config is, not how it ran."""


def _conditions(record: dict, arch: str, path: Path, field: str, checked: set) -> tuple[str, ...]:
    """A record's ``conditions``: an object of config paths and values as ``--set`` takes
    them, as overrides in path order; each distinct set is loaded on the arch once here, so
    a bad path or value fails with the record's file and field."""
    if "conditions" not in record:
        return ()
    value = record["conditions"]
    if not isinstance(value, dict) or not value or not all(
            isinstance(k, str) and CONDITION_PATH.fullmatch(k) and k.split(".")[0] not in NOT_CONDITIONS
            and isinstance(v, str | int | float) and not isinstance(v, bool) and "#" not in str(v)
            and "\n" not in str(v) for k, v in value.items()):
        raise InputError("expected an object of config paths and values, as --set takes them (e.g. "
                         '{"clock": "1500 MHz"}; not the chip\'s name or kind)', source=str(path), field=field)
    return _loads_on(arch, tuple(f"{key}={value[key]}" for key in sorted(value)), checked, path, field)


def _loads_on(arch: str, overrides: tuple[str, ...], checked: set, path: Path, field: str) -> tuple[str, ...]:
    """``overrides`` once ``arch`` was seen to load with them (each distinct set once, in
    ``checked``); a refusal is an error of the record's ``field``."""
    if (arch, overrides) not in checked:
        try:
            load_arch(arch, clocks_as_boost(overrides, _sets(overrides, "clock") and boost_on(load_arch(arch))))
        except InputError as exc:
            raise InputError(_refused_conditions(exc, f"on {arch}"), source=str(path), field=field) from None
        checked.add((arch, overrides))
    return overrides


MAX_CLOCK_MHZ = 1e6
"""A clock reading above a terahertz is a unit slip (Hz for MHz, say)."""


def _ran_at_clock(record: dict, arch: str, path: Path, field: str, checked: set) -> str | None:
    """The clock override of a record's ``sm_clock_mhz`` (what the measurement scripts read
    from NVML while timing it): its median in MHz."""
    if "sm_clock_mhz" not in record:
        return None
    value = record["sm_clock_mhz"]
    if not (isinstance(value, dict) and set(value) == {"median", "min", "max", "readings"}
            and all(is_finite_number(value[k]) and 1 <= value[k] <= MAX_CLOCK_MHZ for k in ("median", "min", "max"))
            and isinstance(value["readings"], int) and not isinstance(value["readings"], bool) and value["readings"] > 0
            and value["min"] <= value["median"] <= value["max"]):
        raise InputError(f"expected {{median, min, max, readings}}: SM clocks in MHz from 1 to {MAX_CLOCK_MHZ:g} with "
                         "min <= median <= max, and a whole number of readings", source=str(path), field=field)
    (override,) = _loads_on(arch, (f"clock={value['median']:.0f} MHz",), checked, path, field)
    return override


CACHE_FLUSH_ACCESSES = ("write", "read")


def _flushed_cache(record: dict, arch: str, path: Path, field: str, checked: set) -> str | None:
    """The override of a record's ``cache_flush`` (what its timing tool did before each timed
    call): a buffer written leaves that many dirty bytes in the L2 (as many as fit), one
    read leaves it clean (``shared_cache.dirty_at_start``, docs/engine.md)."""
    if "cache_flush" not in record:
        return None
    value = record["cache_flush"]
    if not (isinstance(value, dict) and set(value) == {"bytes", "access"} and value["access"] in CACHE_FLUSH_ACCESSES
            and is_finite_number(value["bytes"]) and value["bytes"] >= 1):
        raise InputError("expected {bytes, access}: the bytes the timing tool's flush moves before each timed call "
                         f"(at least 1) and how it moves them ({' or '.join(CACHE_FLUSH_ACCESSES)})", source=str(path),
                         field=field)
    dirty = f"{value['bytes']:.0f} B" if value["access"] == "write" else "0 B"
    (override,) = _loads_on(arch, (f"shared_cache.dirty_at_start={dirty}",), checked, path, field)
    return override


def _kernel_device_s(record: dict, path: Path, field: str) -> tuple[tuple[str, float], ...]:
    """A record's per-kernel device times (``measure_gpu.py``'s ``kernel_device_s``)."""
    if "kernel_device_s" not in record:
        return ()
    value = record["kernel_device_s"]
    if not isinstance(value, list) or not value or not all(
            isinstance(k, dict) and set(k) == {"name", "device_s"} and isinstance(k["name"], str)
            and is_measured_time(k["device_s"]) for k in value):
        raise InputError(f"expected a list of {{name, device_s}} with device_s in seconds, {MEASURED_RANGE}",
                         source=str(path), field=field)
    return tuple((k["name"], float(k["device_s"])) for k in value)


def _informs(record: dict, path: Path, field: str) -> tuple[str, ...]:
    """A record's ``informs``: the config paths its chip's published values were derived at."""
    value = record.get("informs", [])
    if not isinstance(value, list) or not all(isinstance(v, str) and CONDITION_PATH.fullmatch(v) for v in value):
        raise InputError("expected a list of config paths (e.g. [\"hbm.efficiency\"])", source=str(path), field=field)
    return tuple(value)


def _latency_kind(value, path: Path, field: str) -> str:
    if value not in LATENCY_KINDS:
        raise InputError(f"expected one of {', '.join(LATENCY_KINDS)}, got {json.dumps(value)}", source=str(path),
                         field=field)
    return value


def _known_family(family, path: Path, field: str) -> str:
    if family not in FILE_FAMILIES:
        raise InputError(f"unknown family {shown(family)}; expected one of: {', '.join(FILE_FAMILIES)}",
                         source=str(path), field=field)
    return family


def _mapping(value, path: Path, field: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"expected an object of parameters, got {type(value).__name__}", source=str(path),
                         field=field)
    return dict(value)




def _latency(value, path: Path, field: str) -> float:
    """A measured latency in seconds (:func:`is_measured_time`)."""
    if not is_measured_time(value):
        raise InputError(f"expected a latency in seconds, {MEASURED_RANGE}, got {shown(value)}", source=str(path),
                         field=field)
    return float(value)


def measurement_files(paths: Iterable[str | Path]) -> list[Path]:
    """The measurement files ``paths`` name: files as given, every ``*.json`` below a folder."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.json")))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError("no such file or folder", source=str(path))
    return files


def _config_names(family_name: str) -> set[str]:
    return {p.name for p in get_family(family_name).config_params} if family_name in FAMILIES else set()


@contextmanager
def record_errors(measurement: Measurement) -> Iterator[None]:
    """Errors of a record's parameters or config as errors of the record: its file, its id
    and the field. The families name every value they take ``params.NAME``; a record keeps
    its config apart, so a config value's error names ``config.NAME``."""
    try:
        yield
    except InputError as exc:
        if exc.source not in (None, measurement.file):
            raise
        field = exc.field or ""
        name = field.removeprefix("params.")
        if measurement.config is not None and name in _config_names(measurement.family):
            field = f"config.{name}"
        where = f"record {shown(measurement.id)}" + (f": {field}" if field else "")
        raise InputError(exc.message, source=measurement.file, field=where) from None


def predict(measurement: Measurement, chip: Chip, *, search: bool = True) -> Comparison:
    family = get_family(measurement.family)
    with record_errors(measurement):
        params = parse_values(family.params, measurement.params)
    with record_errors(measurement):
        if measurement.config is not None:
            best = run_config(family, params, family.resolve_config(params, measurement.config, chip), chip)
        elif search:
            best = best_config(family, params, chip).best
        else:
            best = run_config(family, params, family.resolve_config(params, {}, chip), chip)
    sim = best.sim
    bodies = tuple(sim.per_kernel_s) if sim.per_kernel_s else (sim.latency_s - sim.launch_overhead_s,)
    kernels = tuple(body + launch_inside_s(chip) for body in bodies)
    return Comparison(measurement, simulated_for(measurement, sim, chip), sim.bound, best.config, sim.flops, sim.hbm_bytes,
                      kernels, chip.clock_hz)


@dataclass(frozen=True)
class Refused:
    """A record naming a config the simulator cannot run (e.g. one a compiler made fit by
    spilling registers), with the simulator's reason."""

    measurement: Measurement
    reason: str


def compare(measurements: Sequence[Measurement], *, overrides: Sequence[str] = (), search: bool = True,
            refused: list[Refused] | None = None, jobs: int = 1) -> list[Comparison]:
    """Predict every record. With ``refused`` given, records whose named config the simulator
    rejects are appended there instead of failing the whole comparison. ``jobs`` worker
    processes predict records in parallel (the same predictions, in the same order)."""
    with mapped(_worker_attempt, measurements, jobs, _init_worker, (tuple(overrides), search)) as outcomes:
        return _collect(measurements, outcomes, refused)


def _collect(measurements: Sequence[Measurement], outcomes: Iterable, refused: list[Refused] | None) -> list[Comparison]:
    """The comparisons, in order; the first error that is not a refused named config is raised."""
    out = []
    for m, outcome in zip(measurements, outcomes):
        if isinstance(outcome, Comparison):
            out.append(outcome)
        elif refused is None or m.config is None or isinstance(outcome, ConditionsError):
            raise outcome
        else:
            refused.append(Refused(m, str(outcome)))
    return out


_WORKER: dict = {}
"""The overrides and search flag of a comparison, and its chips by arch (in a worker process, or here)."""


def _init_worker(overrides: tuple[str, ...], search: bool) -> None:
    _WORKER.clear()
    _WORKER.update(overrides=overrides, search=search, chips={})


def _worker_attempt(m: Measurement) -> Comparison | InputError:
    """The record's comparison, or the InputError predicting it raised."""
    try:
        comparison = predict(m, chip_for(m, m.arch, _WORKER["overrides"], _WORKER["chips"]), search=_WORKER["search"])
        return replace(comparison, at_read_clock=m.read_clock_applies(_WORKER["overrides"]))
    except InputError as exc:
        return exc


@dataclass(frozen=True)
class Summary:
    group: tuple[str, ...]
    count: int
    mape: float
    median_abs: float
    p90_abs: float
    mean_signed: float
    worst: Comparison


def summarise(comparisons: Sequence[Comparison], key) -> list[Summary]:
    groups: dict[tuple[str, ...], list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault(key(c), []).append(c)
    out = []
    for group, items in sorted(groups.items()):
        errors = sorted(abs(c.error) for c in items)
        out.append(Summary(
            group=group,
            count=len(items),
            mape=sum(errors) / len(errors),
            median_abs=_quantile(errors, 0.5),
            p90_abs=_quantile(errors, 0.9),
            mean_signed=sum(c.error for c in items) / len(items),
            worst=max(items, key=lambda c: abs(c.error)),
        ))
    return out


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b between two rankings (1: same order, -1: reversed). Pairs tied in
    either ranking count as neither agreeing nor disagreeing, and the denominator leaves
    them out, so configs the simulator predicts as equal neither help nor sink the score;
    nan when either ranking is all ties."""
    n = len(a)
    concordant = discordant = tied_a = tied_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            sign = (a[i] - a[j]) * (b[i] - b[j])
            concordant += sign > 0
            discordant += sign < 0
            tied_a += a[i] == a[j]
            tied_b += b[i] == b[j]
    pairs = n * (n - 1) / 2
    denominator = math.sqrt((pairs - tied_a) * (pairs - tied_b))
    return (concordant - discordant) / denominator if denominator else math.nan


def config_rankings(comparisons: Sequence[Comparison]) -> list[tuple[str, int, float]]:
    """For every kernel (implementation, family and params on one chip) measured with several
    configs: how well the predicted order of its configs matches the measured order (Kendall tau)."""
    groups: dict[str, list[Comparison]] = {}
    for c in comparisons:
        m = c.measurement
        if m.config is not None:  # the same kernel under the same conditions (a clock apart is not a config apart)
            key = (f"{m.arch} {m.family} {m.implementation} {json.dumps(m.params, sort_keys=True)}"
                   + (f" at {', '.join(m.conditions)}" if m.conditions else ""))
            groups.setdefault(key, []).append(c)
    return [
        (key, len(items), kendall_tau([c.measurement.latency_s for c in items], [c.predicted_s for c in items]))
        for key, items in sorted(groups.items()) if len(items) >= 2
    ]


@dataclass(frozen=True)
class KernelRow:
    """One measured kernel of a call beside the simulated one in its place (``None`` where
    the counts differ, so no kernel pairs with another)."""

    comparison: Comparison
    index: int
    name: str
    measured_s: float
    predicted_s: float | None


UTILITY_LAUNCHES = ("Memset", "Memcpy", "FillFunctor")
"""What a profiler lists among a call's launches besides its kernels: its memset and copy
entries (``Memset (Device)``, ``Memcpy DtoD``) and PyTorch's fill of a buffer it zeroes
(``...FillFunctor...``): set aside when pairing kernels (:func:`kernel_rows`)."""


def kernel_rows(comparisons: Sequence[Comparison]) -> list[KernelRow]:
    """For records whose kernels were timed one by one (``kernel_device_s``): each measured
    kernel beside the simulated kernel at its place in the call, when the call launched as
    many kernels as the trace has (a split-KV decode's split and combine, say) besides its
    memsets, copies and fills (:data:`UTILITY_LAUNCHES`), which pair with none; a simulated
    kernel's time leaves its launch out, as a device time does."""
    rows = []
    for c in comparisons:
        measured = c.measurement.kernel_device_s
        place = _kernel_places([name for name, _ in measured], len(c.per_kernel_s))
        rows += [KernelRow(c, i, name, seconds, None if place[i] is None else c.per_kernel_s[place[i]])
                 for i, (name, seconds) in enumerate(measured)]
    return rows


def _kernel_places(names: Sequence[str], simulated: int) -> list[int | None]:
    """Each measured launch's simulated kernel (its index), or None where none pairs: the
    launches other than memsets, copies and fills pair in order when there are as many as
    simulated kernels; a call of nothing else (a device copy) pairs its launches."""
    kept = [i for i, name in enumerate(names) if not any(utility in name for utility in UTILITY_LAUNCHES)]
    kept = kept or list(range(len(names)))
    if len(kept) != simulated:
        return [None] * len(names)
    place: list[int | None] = [None] * len(names)
    for k, i in enumerate(kept):
        place[i] = k
    return place


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values with linear interpolation (numpy's default
    ``np.percentile`` method: position q x (n - 1))."""
    if not sorted_values:
        return math.nan
    position = q * (len(sorted_values) - 1)
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)
