"""``impl=liger``: Liger-Kernel's Triton norm forwards (linkedin/Liger-Kernel
``src/liger_kernel/ops/layer_norm.py`` ``_layer_norm_forward_kernel`` and ``rms_norm.py``
``_rms_norm_forward_kernel``, read at liger 0.5.x) at the launch Liger makes: one program per
row (``grid = (n_rows,)``), the whole row as one Triton block of ``next_power_of_2(cols)``
elements, and warps by ``calculate_settings`` (``ops/utils.py``: 4 below a 2048-element
block, 8, 16, and 32 from 32768; it refuses blocks above 65536). The kernel body is the
families' one-pass Triton trace: the row and the weights loaded once, the statistics
reduced in fp32, the row and its statistics written. The weights' dtype is the module's
(``weight_dtype``): Liger's benchmarks keep an fp32 weight under bf16 activations, which
every program reads from the L2.

Left out: Liger's row-block kernels of later releases (several rows per program for short
rows), its casting modes other than Llama's (Gemma's casts the weight too: the same bytes),
and what the families' Triton trace leaves out (spills past the register budget are a second
read of the row).
"""

from __future__ import annotations

from accelsim.arch.model import Chip, TpuChip
from accelsim.errors import InputError
from accelsim.families import rowwise
from accelsim.families.norm_impls.base import Config, NormImpl, Params, fixed_launch
from accelsim.families.rowwise import RowOp

MAX_BLOCK = 65536
"""``calculate_settings``'s ``MAX_FUSED_SIZE``: a larger row is refused."""
WARPS_FROM = ((32768, 32), (8192, 16), (2048, 8), (0, 4))
"""``calculate_settings``: warps for a Triton block of at least this many elements."""


def calculate_settings(cols: int) -> int:
    """Liger's warps for a row of ``cols`` elements."""
    block = 1 << (cols - 1).bit_length()
    return next(warps for least, warps in WARPS_FROM if block >= least)


def default_config(op: RowOp, params: Params, chip: Chip) -> Config:
    if isinstance(chip, TpuChip):
        return rowwise.default_config(op, params, chip)
    return {"block_rows": 1, "num_warps": calculate_settings(params["cols"])}


def check(op: RowOp, params: Params, config: Config, chip: Chip) -> None:
    if isinstance(chip, TpuChip):
        raise InputError(f"{chip.name} runs the Pallas kernel; Liger-Kernel's kernels are Triton GPU kernels",
                         field="params.impl")
    if 1 << (params["cols"] - 1).bit_length() > MAX_BLOCK:
        raise InputError(f"Liger-Kernel refuses rows above {MAX_BLOCK} columns (calculate_settings), "
                         f"got cols={params['cols']}", field="params.cols")
    fixed_launch("liger", config, {"block_rows": 1})
    rowwise.check(op, params, config, chip)


IMPL = NormImpl(
    name="liger",
    default_config=default_config,
    config_space=lambda op, params, chip: [default_config(op, params, chip)],
    build=rowwise.triton_build,
    check=check,
)
