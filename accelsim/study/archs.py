"""Configs for sweep points: validated and resolved quickly, many times over.

Reading a config file is the slow part of :func:`accelsim.arch.model.load_arch`
(about 35 ms of YAML parsing); applying ``--set`` overrides and validating is about
0.3 ms. A sweep reads each base file once per process and applies every point's
overrides to that copy, through the same loader functions ``load_arch`` uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from accelsim.arch.loader import (
    RawConfig,
    load_raw,
    parse_override,
    validate,
    with_values,
)
from accelsim.arch.model import (
    REFERENCE_FIELDS,
    Arch,
    forwarded_overrides,
    load_arch,
    refuse_clock_under_boost,
    resolve,
    with_family_chips,
)


@lru_cache(maxsize=32)
def _raw(name: str) -> RawConfig:
    return load_raw(name)


@lru_cache(maxsize=32)
def _spec(name: str):
    """The base config validated as its files have it: each point's overrides are set on it."""
    return validate(_raw(name))


def _is_path(name: str) -> bool:
    return name.endswith((".yaml", ".yml")) or "/" in name


def validate_point(base: str, overrides: Sequence[str]):
    """Validate ``base`` with ``overrides`` (and the configs it is built on, with the
    overrides forwarded to them) without resolving; raises InputError."""
    raw = _raw(base)
    reference = REFERENCE_FIELDS.get(str(raw.data.get("kind")))
    own = [o for o in overrides if not (reference and o.startswith(reference + "."))]
    parsed = [parse_override(o) for o in own]
    spec = with_values(_spec(base), parsed)
    refuse_clock_under_boost(spec, parsed)
    if reference:
        referenced = getattr(spec, reference)
        forwarded = forwarded_overrides(overrides, reference)
        if _is_path(referenced):
            load_arch(base, overrides)  # a path is relative to the base file: let the loader find it
        else:
            validate_point(referenced, forwarded)
    return spec


def resolve_point(base: str, overrides: Sequence[str]) -> Arch:
    """The resolved chip or system of one point."""
    spec = validate_point(base, overrides)
    if str(_raw(base).data.get("kind")) == "chip":
        own = [parse_override(o) for o in overrides]
        return with_family_chips(resolve(spec), _raw(base), spec, own)  # a calibrated chip's scoped values
    return load_arch(base, overrides)


def kind_of(base: str) -> str:
    """``chip``, ``node``, ``cluster``, ``torus`` or ``multislice``."""
    return str(_raw(base).data.get("kind"))
