"""``impl=triton``: this repository's Triton row kernels (``kernels/triton/{layernorm,rmsnorm}.py``),
the families' original model (:mod:`accelsim.families.rowwise`): several rows per program
when rows are short, warps from the block size, and ``config=auto`` searches rows per program
and warps. On TPUs the Pallas kernel.

Left out: what :mod:`accelsim.families.rowwise` leaves out (Triton's spills, which the
two-pass column loop stands in for)."""

from __future__ import annotations

from accelsim.families import rowwise
from accelsim.families.norm_impls.base import NormImpl

IMPL = NormImpl(
    name="triton",
    default_config=rowwise.default_config,
    config_space=rowwise.config_space,
    build=rowwise.triton_build,
    check=rowwise.check,
)
