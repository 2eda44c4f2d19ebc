"""The matrix peak follows a what-if on the matrix units' count or shape.

A config gives the chip's peak (``matrix_unit.flops_per_cycle_per_core``) beside the
unit count and shape it was published with. A layer above it (a file that ``extends`` it,
:func:`with_derived_peak`, or ``--set`` values applied to the spec,
:func:`peak_after_overrides`) that changes ``units_per_core`` or ``shape`` but not the peak keeps the
rate of each unit, not the chip's rate: the peak is scaled by the count, and on a TPU by
the systolic array's cells (``rows x cols`` multiply-accumulates per cycle), so a
256x256-MXU v5e has 4x the peak of the published one. A GPU's ``shape`` is the MMA
instruction's granule, which does not set the Tensor Cores' rate: changing it alone is
refused with the field that holds the peak. Every published config gives its own peak
with its own count and shape, so nothing is scaled for it.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import ValidationError

from accelsim.arch import schema
from collections.abc import Sequence

from accelsim.arch.loader import Override, OverrideError, RawConfig, load_raw
from accelsim.errors import InputError

PEAK = ("matrix_unit", "flops_per_cycle_per_core")
UNITS = ("matrix_unit", "units_per_core")
SHAPE = ("matrix_unit", "shape")


def with_derived_peak(spec: schema.ChipSpec, raw: RawConfig) -> schema.ChipSpec:
    """``spec`` with its matrix peak scaled to the unit count and shape it now has, where a
    layer above the one that gives the peak changed them (see the module docstring)."""
    published_in = raw.locate(PEAK)[0]
    if raw.locate(UNITS)[0] == published_in and raw.locate(SHAPE)[0] == published_in:
        return spec  # count and shape are the ones the peak was published with
    units, shape = _published_units_and_shape(published_in)
    return _following(spec, units, shape, published_in, where=lambda changed: raw.locate(changed)[0])


def peak_after_overrides(before: schema.ChipSpec, after: schema.ChipSpec,
                         overrides: Sequence[Override]) -> schema.ChipSpec:
    """``after`` (``before`` with ``overrides`` set) with its peak scaled to a unit count or
    shape an override changed, unless an override gives the peak (or a dtype of it) too."""
    if any(o.path[:len(PEAK)] == PEAK[:len(o.path)] for o in overrides):
        return after  # the what-if gives the peak itself (or the whole matrix_unit section)
    unit = before.matrix_unit
    return _following(after, unit.units_per_core.value, list(unit.shape.value), before.name,
                      where=lambda changed: None)


def _following(spec: schema.ChipSpec, units: int, shape: list[int], published_in: str, *, where) -> schema.ChipSpec:
    """``spec`` whose peak was published for ``units`` units of ``shape``, scaled to the
    count and shape it has now (refused for a GPU's shape alone)."""
    unit = spec.matrix_unit
    if spec.family == "gpu" and list(unit.shape.value) != shape:
        where = where(SHAPE)
        raise _error(where, "on a GPU the shape is the MMA instruction's granule, which does not set the Tensor "
                            "Cores' rate: give matrix_unit.flops_per_cycle_per_core, which holds the peak, with it",
                     ".".join(SHAPE))
    factor = unit.units_per_core.value / units
    if spec.family == "tpu":
        factor *= math.prod(unit.shape.value[:2]) / math.prod(shape[:2])
    if factor == 1:
        return spec
    changed = UNITS if unit.units_per_core.value != units else SHAPE
    return _scaled(spec, factor, published_in, units, shape, where=where(changed))


def _published_units_and_shape(path: str) -> tuple[int, list[int]]:
    """The unit count and shape in effect in the config that gives the peak."""
    try:
        section = schema.MatrixUnit.model_validate(load_raw(path).data.get("matrix_unit"))
    except ValidationError as exc:
        raise InputError(f"its matrix_unit section is not complete on its own ({exc.errors()[0]['msg']}), so the "
                         "peak it gives cannot be scaled to another unit count or shape", source=path,
                         field="matrix_unit") from None
    return section.units_per_core.value, list(section.shape.value)


def _scaled(spec: schema.ChipSpec, factor: float, published_in: str, units: int, shape: list[int], *,
            where: str | None) -> schema.ChipSpec:
    unit = spec.matrix_unit
    peak = unit.flops_per_cycle_per_core
    scaled = {dtype: rate * factor for dtype, rate in peak.value.items()}
    too_large = [dtype for dtype, rate in scaled.items() if rate > schema.LARGEST]
    if too_large:
        raise _error(where, f"the peak scaled to {unit.units_per_core.value} units of {_cells(unit.shape.value)} would "
                            f"be {scaled[too_large[0]]:g} flop per cycle for {too_large[0]}, over {schema.LARGEST:g}",
                     ".".join(PEAK))
    derived = type(peak)(
        value=scaled, basis="derived", note=peak.note,
        source=(f"{Path(published_in).name}'s peak ({units} units of {_cells(shape)}) x {factor:g} for "
                f"{unit.units_per_core.value} units of {_cells(unit.shape.value)}: the rate of each unit "
                f"{'cell ' if spec.family == 'tpu' else ''}kept"),
    )
    return spec.model_copy(update={"matrix_unit": unit.model_copy(update={"flops_per_cycle_per_core": derived})})


def _error(source: str | None, message: str, field: str) -> InputError:
    """An error of the file ``source``, or of an override (no source: the caller says where
    its values came from)."""
    return InputError(message, source=source, field=field) if source else OverrideError(message, field=field)


def _cells(shape) -> str:
    return "x".join(map(str, shape))
