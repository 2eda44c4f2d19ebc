"""The row-wise families' registers per thread are Triton's (compiled for sm_90), and they
decide how many programs share an SM: a layernorm row of 16384 fp32 values over 16 warps
holds an SM alone, a softmax row of the same size does not."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.errors import InputError
from accelsim.families.rowwise import LAYERNORM_OP, RMSNORM_OP, SOFTMAX_OP, gpu_layout, one_pass_registers
from accelsim.families.search import split_params

H100 = load_arch("h100-sxm")


@pytest.mark.parametrize("op, width, threads, dtype, expected", [
    (LAYERNORM_OP, 16384, 512, "fp32", 128),  # Triton 3.9, sm_90, 16 warps
    (LAYERNORM_OP, 8192, 512, "fp32", 64),
    (LAYERNORM_OP, 1024, 128, "fp32", 40),
    (RMSNORM_OP, 16384, 512, "bf16", 62),
    (SOFTMAX_OP, 16384, 512, "fp32", 58),
    (LAYERNORM_OP, 8192, 128, "fp32", 236),  # 64 values per thread, still one pass, no spill
    (RMSNORM_OP, 8192, 128, "bf16", 121),
])
def test_one_row_programs_take_the_compiled_counts(op, width, threads, dtype, expected):
    assert one_pass_registers(op, 1, width, threads, dtype) == expected


def test_more_rows_add_the_row_not_the_weights():
    """Four rows of 4096 bf16 columns over 4 warps: Triton allocates 233 (layernorm), 166
    (rmsnorm), 158 (softmax); the weights are held once, so four rows cost less than four
    times one row."""
    for op, compiled in ((LAYERNORM_OP, 233), (RMSNORM_OP, 166), (SOFTMAX_OP, 158)):
        four = one_pass_registers(op, 4, 4096, 128, "bf16")
        assert four == pytest.approx(compiled, abs=12)
        assert four < 4 * one_pass_registers(op, 1, 4096, 128, "bf16")


def _simulate(name: str, cols: int, warps: int, dtype: str):
    family = get_family(name)
    params, _, _ = split_params(family, {"rows": "4096", "cols": str(cols), "dtype": dtype})
    config = family.resolve_config(params, {"block_rows": "1", "num_warps": str(warps)}, H100)
    return simulate_kernel(family.build(params, config, H100), H100)


def test_registers_set_programs_per_sm():
    layernorm = _simulate("layernorm", 16384, 16, "fp32")
    softmax = _simulate("softmax", 16384, 16, "fp32")
    assert (layernorm.programs_per_core, layernorm.occupancy_limit) == (1, "registers")
    assert softmax.programs_per_core == 2


def _layout(op, cols, warps, block_rows, dtype):
    return gpu_layout(op, {"rows": 4096, "cols": cols, "dtype": dtype},
                      {"block_rows": block_rows, "num_warps": warps}, H100)


def test_one_pass_while_the_compiler_fits_the_row():
    """64 fp32 values per thread on 4 warps compile to 236 registers, one pass; an estimate
    just over the 255 limit (4 rows of 4096 on 4 warps: 257, Triton 255) is held at it."""
    assert _layout(LAYERNORM_OP, 8192, 4, 1, "fp32").chunk_cols is None
    assert _layout(LAYERNORM_OP, 16384, 8, 1, "fp32").chunk_cols is None
    four = _layout(LAYERNORM_OP, 4096, 4, 4, "fp32")
    assert (four.chunk_cols, four.registers_per_thread) == (None, 255)


def test_rows_past_the_budget_loop_over_columns():
    """Liger's 32-warp launch at 32768 fp32 columns: 128 registers against the 64 a
    1024-thread program may hold (Triton spills); the family loops, one row per program."""
    layout = _layout(LAYERNORM_OP, 32768, 32, 1, "fp32")
    assert layout.chunk_cols is not None and layout.block_rows == 1
    with pytest.raises(InputError, match="registers per thread"):
        _layout(LAYERNORM_OP, 4096, 4, 8, "bf16")  # 8 rows on 4 warps: Triton spills 616 bytes
