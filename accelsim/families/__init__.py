"""The registry of kernel families (parametric trace generators), one module each.

A family is registered by where it lives and imported when first asked for, so the
names are known without importing any family: the arch layer checks a chip config's
``family_values`` against them. Adding a family is its module plus one line here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelsim.registry import Registry

if TYPE_CHECKING:
    from accelsim.families.base import Family

FAMILIES: Registry[Family] = Registry("kernel family")
FAMILIES.register_lazy("gemm", "accelsim.families.gemm:FAMILY")
FAMILIES.register_lazy("attention", "accelsim.families.attention:FAMILY")
FAMILIES.register_lazy("softmax", "accelsim.families.rowwise:SOFTMAX")
FAMILIES.register_lazy("layernorm", "accelsim.families.rowwise:LAYERNORM")
FAMILIES.register_lazy("rmsnorm", "accelsim.families.rowwise:RMSNORM")
FAMILIES.register_lazy("copy", "accelsim.families.copy:FAMILY")
FAMILIES.register_lazy("elementwise", "accelsim.families.elementwise:FAMILY")


def get_family(name: str) -> Family:
    return FAMILIES.get(name, field="family")
