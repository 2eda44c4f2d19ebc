"""The points of a sweep: each varied field's values, and grid or random sampling.

A point is one base config plus one value per varied field; its ``overrides`` are
``--set`` strings (``hbm.bandwidth=4 TB/s``) that :mod:`accelsim.arch` applies.
Values keep the text the user wrote (or, for ranges, the user's unit), and a number
in the SI base unit for tables and plots (``4e12`` for ``"4 TB/s"``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass

import numpy as np
import yaml

from accelsim.errors import InputError, shown
from accelsim.study.spec import (
    MAX_POINTS,
    LoadedSpec,
    LogRangeSpec,
    ParameterSpec,
    RangeSpec,
    Scalar,
    Value,
)
from accelsim.units import UNITS, UnitError, dimension_of, parse_quantity

ARCH = "arch"
"""The column naming the base config when the spec gives a list of bases."""

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/]+)\s*$")


@dataclass(frozen=True)
class ParamValue:
    """One value of a varied field: as ``--set`` text, as a label, as a number (if it is one)."""

    text: str
    label: str
    number: float | None


@dataclass(frozen=True)
class Point:
    index: int
    base: str
    values: tuple[tuple[str, ParamValue], ...]
    """(field path, value) in the spec's parameter order."""

    @property
    def overrides(self) -> list[str]:
        return [f"{path}={value.text}" for path, value in self.values]

    def value(self, name: str) -> ParamValue:
        if name == ARCH:
            return ParamValue(self.base, self.base, None)
        return dict(self.values)[name]


def quantity(text: object) -> tuple[float, str, float] | None:
    """``"4 TB/s"`` -> (4e12, "TB/s", 1e12); None if ``text`` is not a quantity with a known unit."""
    if not isinstance(text, str):
        return None
    match = _QUANTITY.match(text)
    if not match:
        return None
    unit = match.group(2)
    dimension = dimension_of(unit)
    if dimension is None:
        return None
    try:
        return parse_quantity(text, dimension), unit, UNITS[dimension][unit]
    except UnitError:
        return None


def value_of(raw: Value) -> ParamValue:
    """A value as written in ``values:`` (a number, a quantity string, a bool, a list)."""
    if isinstance(raw, list):
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw)
        return ParamValue(json.dumps(raw), "x".join(str(v) for v in raw) if numeric else json.dumps(raw), None)
    if isinstance(raw, bool):
        return ParamValue(json.dumps(raw), str(raw).lower(), None)
    if isinstance(raw, (int, float)):
        return ParamValue(repr(raw), f"{raw:g}", float(raw))
    text = raw if _reads_back(raw) else json.dumps(raw)
    q = quantity(raw)
    return ParamValue(text, raw, q[0] if q else None)


def _reads_back(text: str) -> bool:
    try:
        return yaml.safe_load(text) == text
    except (yaml.YAMLError, ValueError):
        return False


def _endpoint(raw: float | str, what: str, spec: LoadedSpec, loc: tuple) -> tuple[float, str | None, float]:
    """(value in base units, unit or None, the unit's factor)."""
    if isinstance(raw, (int, float)):
        return float(raw), None, 1.0
    q = quantity(raw)
    if q is None:
        raise spec.error(f"expected a number or a quantity with a unit (e.g. '4 TB/s'), got {raw!r}", loc + (what,))
    return q


def _range_numbers(r: RangeSpec | LogRangeSpec, spec: LoadedSpec, loc: tuple) -> tuple[list[float], str | None, float, bool]:
    start, unit, factor = _endpoint(r.start, "start", spec, loc)
    stop, stop_unit, _ = _endpoint(r.stop, "stop", spec, loc)
    if (unit is None) != (stop_unit is None):
        raise spec.error("'start' and 'stop' must both have a unit or both be numbers", loc)
    if unit is not None and dimension_of(unit) != dimension_of(stop_unit):
        raise spec.error(f"'start' is in {unit} ({dimension_of(unit)}) but 'stop' in {stop_unit} "
                         f"({dimension_of(stop_unit)})", loc + ("stop",))
    if stop < start:
        raise spec.error("'stop' is below 'start'", loc + ("stop",))
    integer = unit is None and all(isinstance(v, int) for v in (r.start, r.stop))
    if isinstance(r, LogRangeSpec):
        if start <= 0:
            raise spec.error("a log range needs 'start' > 0", loc + ("start",))
        numbers = list(np.geomspace(start, stop, r.num))
    elif r.num is not None:
        numbers = list(np.linspace(start, stop, r.num))
    else:
        step, step_unit, _ = _endpoint(r.step, "step", spec, loc)
        if (unit is None) != (step_unit is None) or step <= 0 or (unit and dimension_of(unit) != dimension_of(step_unit)):
            raise spec.error("'step' must be positive, with a unit if 'start' has one", loc + ("step",))
        integer = integer and isinstance(r.step, int)
        count = math.floor((stop - start) / step * (1 + 1e-12)) + 1
        if count > MAX_POINTS:
            raise spec.error(f"'step' gives {count:,} values; a sweep may have at most {MAX_POINTS:,} points",
                             loc + ("step",))
        numbers = [start + i * step for i in range(count)]
    if integer:
        numbers = sorted({round(n) for n in numbers})
    return numbers, unit, factor, integer


def _number_value(number: float, unit: str | None, factor: float, integer: bool) -> ParamValue:
    if integer:
        return ParamValue(str(int(number)), str(int(number)), float(number))
    # six digits of text: the number is the one the text sets, so that the table and plots
    # report the value the point was simulated at, not the unrounded draw
    if unit is None:
        text = f"{number:.6g}"
        return ParamValue(text, text, float(text))
    text = f"{number / factor:.6g} {unit}"
    return ParamValue(text, text, quantity(text)[0])


def parameter_values(name: str, p: ParameterSpec, spec: LoadedSpec) -> list[ParamValue]:
    """Every value a grid takes for one parameter."""
    loc = ("parameters", name)
    if p.values is not None:
        return [value_of(v) for v in p.values]
    r = p.range if p.range is not None else p.log_range
    kind = "range" if p.range is not None else "log_range"
    numbers, unit, factor, integer = _range_numbers(r, spec, loc + (kind,))
    return [_number_value(n, unit, factor, integer) for n in numbers]


def _random_value(name: str, p: ParameterSpec, spec: LoadedSpec, rng: np.random.Generator) -> ParamValue:
    if p.values is not None:
        return value_of(p.values[int(rng.integers(len(p.values)))])
    kind = "range" if p.range is not None else "log_range"
    r = p.range if p.range is not None else p.log_range
    numbers, unit, factor, integer = _range_numbers(r, spec, ("parameters", name, kind))
    low, high = numbers[0], numbers[-1]
    if isinstance(r, RangeSpec) and r.step is not None:
        return _number_value(numbers[int(rng.integers(len(numbers)))], unit, factor, integer)
    if integer and kind == "range":
        return _number_value(int(rng.integers(low, high + 1)), unit, factor, integer)
    if kind == "log_range":
        number = float(math.exp(rng.uniform(math.log(low), math.log(high))))
    else:
        number = float(rng.uniform(low, high))
    return _number_value(round(number) if integer else number, unit, factor, integer)


def sweep_points(spec: LoadedSpec) -> list[Point]:
    """The sweep's points, in a fixed order: the grid's row-major order (bases outermost,
    then parameters in spec order), or the random draws in sequence."""
    s = spec.spec
    names = list(s.parameters)
    if s.sampling == "grid":
        axes = [parameter_values(n, s.parameters[n], spec) for n in names]
        count = math.prod(len(axis) for axis in axes) * len(s.bases)
        if count > MAX_POINTS:
            raise spec.error(f"the grid has {count:,} points; a sweep may have at most {MAX_POINTS:,} "
                             f"(use fewer values, or sampling: random)", ("parameters",))
        combos = itertools.product(s.bases, *axes)
        return [Point(i, base, tuple(zip(names, values))) for i, (base, *values) in enumerate(combos)]
    rng = np.random.default_rng(s.sampling.random.seed)
    points = []
    for i in range(s.sampling.random.samples):
        base = s.bases[int(rng.integers(len(s.bases)))] if len(s.bases) > 1 else s.bases[0]
        values = tuple((n, _random_value(n, s.parameters[n], spec, rng)) for n in names)
        points.append(Point(i, base, values))
    return points


def varied_names(spec: LoadedSpec) -> list[str]:
    """The columns that vary: ``arch`` when there are several bases, then the parameters."""
    return ([ARCH] if len(spec.spec.bases) > 1 else []) + list(spec.spec.parameters)


def substitute(value: Value, variables: dict[str, Scalar], where: str) -> Value:
    """``"$batch"`` -> the value of ``batch``; anything else unchanged."""
    if isinstance(value, str) and value.startswith("$"):
        name = value[1:]
        if name not in variables:
            raise InputError(f"unknown variable {shown(value)}; this workload's vars are: {', '.join(variables) or 'none'}",
                             source=where)
        return variables[name]
    if isinstance(value, list):
        return [substitute(v, variables, where) for v in value]
    return value
