"""Registry of built-in kernel families (parametric trace generators)."""

from __future__ import annotations

from accelsim.errors import InputError
from accelsim.families import attention, copy, elementwise, gemm, rowwise
from accelsim.families.base import Family

FAMILIES: dict[str, Family] = {
    f.name: f for f in (gemm.FAMILY, attention.FAMILY, *rowwise.FAMILIES, copy.FAMILY, elementwise.FAMILY)
}


def get_family(name: str) -> Family:
    if name not in FAMILIES:
        raise InputError(f"unknown kernel family {name!r}; expected one of: {', '.join(FAMILIES)}", source="--kernel")
    return FAMILIES[name]
