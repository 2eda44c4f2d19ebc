"""Power measurements: predicted energy against measured (``accelsim validate --power``), and
the power model's linear parameters fitted on microbenchmark-level readings (``accelsim
calibrate --power``). The record format is in ``docs/power.md``, "Power records".

A record is a kernel of a built-in family (autotuned: ``config=auto``, as the measured
kernels were) run on a chip under the power limit it ran at (``power_cap_w``), with what was
read: its average power and its time (or its energy); or an ``idle`` reading (a device with
nothing running). Only ``level: microbenchmark`` records may be fitted (idle readings, a unit
or a memory level driven flat out); ``kernel`` records check.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.arch.model import Chip, load_arch
from accelsim.engine.energy import KernelEnergy, kernel_activity
from accelsim.errors import InputError, read_json_file, shown
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.families.search import best_config
from accelsim.results import relative_error
from accelsim.units import is_finite_number, is_measured_time

LEVELS = ("microbenchmark", "kernel")
KINDS = ("kernel", "idle")
MAX_WATTS = 1e5
"""No accelerator draws 100 kW: a larger reading is a unit slip."""


@dataclass(frozen=True)
class PowerRecord:
    id: str
    arch: str
    kind: str
    level: str
    average_power_w: float
    source: str
    family: str | None = None
    params: dict[str, Any] | None = None
    latency_s: float | None = None
    power_cap_w: float | None = None
    """The power limit the device ran under (its TDP unless changed): predicted under it."""

    @property
    def energy_j(self) -> float | None:
        return self.average_power_w * self.latency_s if self.latency_s is not None else None


@dataclass(frozen=True)
class PowerPrediction:
    record: PowerRecord
    average_power_w: float
    latency_s: float | None
    energy_j: float | None
    clock_hz: float
    energy: KernelEnergy | None = None
    activity: Any = None

    @property
    def error(self) -> float:
        """Relative error of the energy (the power, for an idle reading)."""
        if self.energy_j is not None and self.record.energy_j:
            return relative_error(self.energy_j, self.record.energy_j)
        return relative_error(self.average_power_w, self.record.average_power_w)


def read_power_records(paths: Iterable[str | Path]) -> list[PowerRecord]:
    """Every record of the power files given (files, or folders of ``*.json``); a bad file or
    field is one located line."""
    records: list[PowerRecord] = []
    for path in _files(paths):
        data = read_json_file(path, "power measurements")
        if not isinstance(data, dict) or data.get("kind") != "power_measurements":
            raise InputError("expected a power measurements file (kind: power_measurements)", source=str(path),
                             field="kind")
        if data.get("schema_version") != 1:
            raise InputError(f"unknown schema_version {shown(data.get('schema_version'))}; expected 1",
                             source=str(path), field="schema_version")
        raw = data.get("records")
        if not isinstance(raw, list):
            raise InputError("expected a list of records", source=str(path), field="records")
        records += [_record(entry, path, f"records[{i}]") for i, entry in enumerate(raw)]
    ids = [r.id for r in records]
    if len(set(ids)) != len(ids):
        raise InputError(f"record id {shown(next(i for i in ids if ids.count(i) > 1))} appears twice", field="id")
    return records


def _files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for path in map(Path, paths):
        out += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return out


def _record(entry: Any, path: Path, where: str) -> PowerRecord:
    def fail(field: str, expected: str) -> InputError:
        value = entry.get(field) if isinstance(entry, dict) else entry
        return InputError(f"expected {expected}, got {shown(value)}", source=str(path), field=f"{where}.{field}")

    if not isinstance(entry, dict):
        raise fail("", "a record (a mapping)")
    for field in ("id", "arch", "source"):
        if not isinstance(entry.get(field), str) or not entry[field]:
            raise fail(field, "a text")
    if entry.get("kind") not in KINDS:
        raise fail("kind", f"one of {', '.join(KINDS)}")
    if entry.get("level") not in LEVELS:
        raise fail("level", f"one of {', '.join(LEVELS)}")
    watts = entry.get("average_power_w")
    if not (is_finite_number(watts) and 0 < watts <= MAX_WATTS):
        raise fail("average_power_w", f"watts above 0 and at most {MAX_WATTS:g}")
    cap = entry.get("power_cap_w")
    if cap is not None and not (is_finite_number(cap) and 0 < cap <= MAX_WATTS):
        raise fail("power_cap_w", f"watts above 0 and at most {MAX_WATTS:g}, or null")
    family = params = latency = None
    if entry["kind"] == "kernel":
        family, params = entry.get("family"), entry.get("params")
        if not isinstance(family, str) or not isinstance(params, dict):
            raise fail("family", "a kernel family and its params")
        latency = entry.get("latency_s")
        if not is_measured_time(latency):
            raise fail("latency_s", "seconds from 1e-09 to 86400")
    return PowerRecord(id=entry["id"], arch=entry["arch"], kind=entry["kind"], level=entry["level"],
                       average_power_w=float(watts), source=entry["source"], family=family, params=params,
                       latency_s=latency, power_cap_w=cap)


def chip_for(record: PowerRecord, arch: str, overrides: Sequence[str] = ()) -> Chip:
    """The record's chip (``arch``, e.g. a calibration of it) under the limit it ran at."""
    cap = [f'power.cap="{record.power_cap_w:g} W"'] if record.power_cap_w is not None else []
    chip = load_arch(arch, [*cap, *overrides])
    if not isinstance(chip, Chip) or chip.power is None:
        raise InputError(f"{shown(arch)} has no power model (a chip config's power section)", field=f"{record.id}.arch")
    return chip


def predict(record: PowerRecord, arch: str, overrides: Sequence[str] = ()) -> PowerPrediction:
    """The record on ``arch``: an idle reading's power, or the kernel's energy, power and time
    under the record's power limit (the family's best config)."""
    chip = chip_for(record, arch, overrides)
    if record.kind == "idle":
        return PowerPrediction(record=record, average_power_w=chip.power.idle_w, latency_s=None, energy_j=None,
                               clock_hz=chip.clock_hz)
    family = get_family(record.family)
    params = parse_values(family.params, {k: str(v) for k, v in record.params.items()}, where=f"{record.id}.params")
    best = best_config(family, params, chip).best
    sim = best.sim
    return PowerPrediction(record=record, average_power_w=sim.energy.average_power_w, latency_s=sim.latency_s,
                           energy_j=sim.energy.joules, clock_hz=sim.energy.clock_hz, energy=sim.energy,
                           activity=kernel_activity(best.trace, chip.for_family(family.name), sim))


# ---------------------------------------------------------------- fitting


PRIOR_WEIGHT = 0.1
"""How strongly a fitted value is held near its published one (relative), so that what the
records do not determine stays put."""


def refuse_kernel_level(records: Sequence[PowerRecord]) -> None:
    kernel = [r for r in records if r.level != "microbenchmark"]
    if kernel:
        raise InputError(f"{len(kernel)} kernel-level power records (first: {kernel[0].id}): calibrate --power fits "
                         "on microbenchmark-level readings only (idle, a unit or a memory level flat out); check "
                         "kernels with accelsim validate --power", field="measurements")


def fit_power(records: Sequence[PowerRecord], arch: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Least squares on each record's relative energy error over the linear terms (static power,
    bf16-style per-dtype matrix and vector energies, HBM's), with a weak prior toward the
    config's values; ``power.idle`` is the mean of the idle readings. Records run at the chip's
    clock (a reading under a cap it passed would need the non-linear DVFS terms: refused).
    Returns ``{path: value}`` in the config's units (watts as text, picojoules as numbers)."""
    refuse_kernel_level(records)
    chip = load_arch(arch, list(overrides))
    power = chip.power
    if power is None:
        raise InputError(f"{shown(arch)} has no power model to fit", field="arch")
    out: dict[str, Any] = {}
    idle = [r.average_power_w for r in records if r.kind == "idle"]
    if idle:
        out["power.idle"] = f"{sum(idle) / len(idle):.4g} W"
    kernels = [predict(r, arch, overrides) for r in records if r.kind == "kernel"]
    for p in kernels:
        if p.clock_hz != chip.clock_hz:
            raise InputError(f"{p.record.id} ran under a cap it passed (at {p.clock_hz / 1e6:.0f} MHz): fit readings "
                             "taken at the chip's clock", field="measurements")
    if not kernels:
        return out
    columns, start = _columns(power, kernels)
    rows, targets = [], []
    for p in kernels:
        measured = p.record.energy_j
        fixed = sum(p.energy.joules_by_part[part] for part in ("special_function", "local_memory", "shared_cache"))
        rows.append([_term(name, p) / measured for name in columns])
        targets.append(1.0 - fixed / measured)
    for i, name in enumerate(columns):  # the prior: each value near its start, relative
        row = [0.0] * len(columns)
        row[i] = PRIOR_WEIGHT / start[i]
        rows.append(row)
        targets.append(PRIOR_WEIGHT)
    solution = np.linalg.lstsq(np.array(rows), np.array(targets), rcond=None)[0]
    for name, value in zip(columns, solution):
        value = max(float(value), 1e-3 * start[columns.index(name)])
        if name == "static":
            out["power.static"] = f"{value:.4g} W"
        elif name == "hbm":
            out["power.hbm_pj_per_byte"] = float(f"{value * 1e12:.4g}")
        else:
            unit, dtype = name.split(":")
            out[f"power.{unit}_pj_per_flop.{dtype}"] = float(f"{value * 1e12:.4g}")
    return out


def _columns(power, kernels: Sequence[PowerPrediction]) -> tuple[list[str], list[float]]:
    names, start = ["static"], [power.static_w]
    for unit, table in (("matrix", power.matrix_j_per_flop), ("vector", power.vector_j_per_flop)):
        used = sorted({d for p in kernels for d, f in getattr(p.activity, f"{unit}_flops").items() if f})
        for dtype in used:
            names.append(f"{unit}:{dtype}")
            start.append(table.get(dtype, table.get("fp32", 1e-12)))
    if any(p.activity.hbm_bytes for p in kernels):
        names.append("hbm")
        start.append(power.hbm_j_per_byte)
    return names, start


def _term(name: str, p: PowerPrediction) -> float:
    """What the record's energy holds per unit of the parameter ``name`` (at the chip's clock)."""
    if name == "static":
        return p.record.latency_s
    if name == "hbm":
        return p.activity.hbm_bytes
    unit, dtype = name.split(":")
    return getattr(p.activity, f"{unit}_flops").get(dtype, 0.0)


def mean_abs_error(predictions: Sequence[PowerPrediction]) -> float:
    return sum(abs(p.error) for p in predictions) / len(predictions) if predictions else math.nan
