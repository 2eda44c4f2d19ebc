"""Physical units: parsing of typed unit strings and the one place conversions live.

Configs write quantities as strings with a unit (``"3.35 TB/s"``, ``"50 MiB"``,
``"1.98 GHz"``, ``"600 ns"``). They are parsed once, at load time, into floats in
the SI base unit of their dimension:

=================  ============  ==================================================
dimension          base unit     accepted units
=================  ============  ==================================================
``bytes``          byte          B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB
``bytes_per_s``    byte/second   B/s ... PB/s, KiB/s ... TiB/s, and bits: Gb/s,
                                 Gbps, Gbit/s (and K/M/T prefixes)
``hz``             hertz         Hz, kHz, MHz, GHz
``seconds``        second        s, ms, us, µs, ns, ps
``flops_per_s``    flop/second   FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (also FLOPS,
                                 TFLOPS, ...); OP/s forms for integer throughput
``watts``          watt          mW, W, kW
=================  ============  ==================================================

Decimal prefixes (K, M, G, T, P) are powers of 1000, binary ones (Ki, Mi, ...)
powers of 1024, as vendors use them: "80 GB" of HBM is 80e9 bytes.
"""

from __future__ import annotations

import math
import re

from accelsim.errors import InputError, shown

_DECIMAL = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _byte_units() -> dict[str, float]:
    units = {f"{p}B": f for p, f in _DECIMAL.items() if p != "k"}
    units.update({f"{p}B": f for p, f in _BINARY.items()})
    units["kB"] = 1e3
    return units


def _bandwidth_units() -> dict[str, float]:
    units = {f"{name}/s": f for name, f in _byte_units().items()}
    for p, f in _DECIMAL.items():
        for bits in (f"{p}b/s", f"{p}bps", f"{p}bit/s"):
            units[bits] = f / 8.0
    return units


def _flops_units() -> dict[str, float]:
    units: dict[str, float] = {}
    for p, f in _DECIMAL.items():
        for word in ("FLOP/s", "FLOPS", "OP/s", "OPS"):
            units[f"{p}{word}"] = f
    return units


UNITS: dict[str, dict[str, float]] = {
    "bytes": _byte_units(),
    "bytes_per_s": _bandwidth_units(),
    "hz": {"Hz": 1.0, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9},
    "seconds": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12},
    "flops_per_s": _flops_units(),
    "watts": {"mW": 1e-3, "W": 1.0, "kW": 1e3},
}

EXAMPLES = {
    "bytes": "'50 MiB'",
    "bytes_per_s": "'3.35 TB/s'",
    "hz": "'1.98 GHz'",
    "seconds": "'600 ns'",
    "flops_per_s": "'989 TFLOP/s'",
    "watts": "'700 W'",
}

DESCRIPTIONS = {
    "bytes": "a size",
    "bytes_per_s": "a bandwidth",
    "hz": "a frequency",
    "seconds": "a time",
    "flops_per_s": "a throughput",
    "watts": "a power",
}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/]+)\s*$")


class UnitError(ValueError):
    """A quantity string that does not parse as the expected dimension."""


def dimension_of(unit: str) -> str | None:
    for dim, table in UNITS.items():
        if unit in table:
            return dim
    return None


def parse_quantity(text: object, dimension: str) -> float:
    """Parse ``text`` (e.g. ``"3.35 TB/s"``) into a float in the base unit of ``dimension``.

    Bare numbers are refused: a quantity in a config must say its unit.
    Raises :class:`UnitError` with a message saying what was expected.
    """
    expected = f"{DESCRIPTIONS[dimension]} with a unit, e.g. {EXAMPLES[dimension]}"
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"expected {expected}, got {type(text).__name__} {shown(text)}")
    if isinstance(text, (int, float)):
        raise UnitError(f"expected {expected}, got the bare number {shown(text)} (no unit)")
    match = _QUANTITY.match(text)
    if not match:
        raise UnitError(f"expected {expected}, got {shown(text)}")
    number, unit = float(match.group(1)), match.group(2)
    table = UNITS[dimension]
    if unit not in table:
        other = dimension_of(unit)
        if other is not None:
            raise UnitError(
                f"expected {expected}, got {shown(text)} ({shown(unit)} is a unit of {DESCRIPTIONS[other]})"
            )
        raise UnitError(f"expected {expected}, got {shown(text)} (unknown unit {shown(unit)})")
    value = number * table[unit]
    if not math.isfinite(value):
        raise UnitError(f"expected {expected}, got {shown(text)} (not finite)")
    return value


def format_quantity(value: float, dimension: str) -> str:
    """Render a base-unit value with a readable prefix: ``3.35e12, "bytes_per_s" -> "3.35 TB/s"``.
    Sizes use a binary prefix when that is exact and under 1024 of it (``228 KiB``),
    otherwise decimal (``80 GB``)."""
    if dimension == "bytes":
        for prefix in ("Pi", "Ti", "Gi", "Mi", "Ki"):
            mantissa = value / _BINARY[prefix]
            if 1 <= mantissa < 1024 and mantissa.is_integer():
                return f"{_trim(mantissa)} {prefix}B"
        return _decimal(value, "B")
    if dimension == "seconds":
        for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            if abs(value) >= factor:
                return f"{_trim(value / factor)} {unit}"
        return f"{_trim(value / 1e-12)} ps"
    if dimension == "watts":
        return f"{_trim(value)} W"
    suffix = {"bytes_per_s": "B/s", "hz": "Hz", "flops_per_s": "FLOP/s"}[dimension]
    return _decimal(value, suffix)


def _decimal(value: float, suffix: str) -> str:
    for prefix in ("P", "T", "G", "M", "K"):
        factor = _DECIMAL[prefix]
        if abs(value) >= factor:
            return f"{_trim(value / factor)} {prefix}{suffix}"
    return f"{_trim(value)} {suffix}"


def _trim(x: float) -> str:
    return f"{x:.4g}"


PS_PER_S = 10**12

J_PER_PJ = 1e-12
"""Energies per operation or byte are written in picojoules (``hbm_pj_per_byte``)."""


MAX_EXACT_BYTES = 2**53
"""8 PiB: the largest byte count a float still counts exactly, so the most a size may hold."""

MAX_MEASURED_S = 86400.0
"""A day: no kernel or collective measurement takes longer; a larger value is a unit slip."""
MIN_MEASURED_S = 1e-9
"""A nanosecond, about one clock cycle of any accelerator (they run at 1 to 2 GHz): nothing
is timed faster (a kernel launch alone takes microseconds). A smaller time is a unit slip
or a damaged file, and would be reported as an error of +inf% or a bandwidth of inf GB/s."""
MEASURED_RANGE = "at least 1e-09 s (a nanosecond, about a clock cycle) and at most 86400 s (a day)"


def is_finite_number(value) -> bool:
    """A finite JSON number (an integer of any size is: ``math.isfinite`` would overflow
    converting a huge one)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def is_measured_time(seconds) -> bool:
    """A time a measurement can hold: a finite number from :data:`MIN_MEASURED_S` to
    :data:`MAX_MEASURED_S` (seconds)."""
    return is_finite_number(seconds) and MIN_MEASURED_S <= seconds <= MAX_MEASURED_S

MAX_SIMULATED_PS = 2**62
"""The simulated clock's range (about 53 days): integer picoseconds that numpy's int64
holds with room to add; a time past it is an input out of scale, not a result."""


def check_simulated_ps(ps: float) -> None:
    """Refuse a simulated time outside the clock's range (a duration, size or rate in the
    input out of scale: 1e300 s, 1e20 flops on one core, a clock of 1 Hz)."""
    if not 0 <= ps <= MAX_SIMULATED_PS:  # also NaN
        raise InputError(f"a simulated time of {ps / PS_PER_S:.4g} s is outside the simulator's clock (0 to "
                         f"{MAX_SIMULATED_PS / PS_PER_S / 86400:.0f} days): a duration, size or rate in the input "
                         "is out of scale")


def seconds_to_ps(seconds: float) -> int:
    """Simulated time is kept in integer picoseconds; this is the one rounding point."""
    ps = seconds * PS_PER_S
    check_simulated_ps(ps)
    return int(round(ps))


def ps_to_seconds(ps: int) -> float:
    return ps / PS_PER_S
