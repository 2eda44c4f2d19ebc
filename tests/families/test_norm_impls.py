"""Norm implementations (``--param impl=`` on ``layernorm`` and ``rmsnorm``): each launches
what its library launches, moves the bytes its kernels move, and the engine decides where
PyTorch's second read of a row comes from."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.norm_impls.liger import calculate_settings
from accelsim.families.search import split_params
from tests.families.test_rowwise import tensor_totals


@pytest.fixture(scope="module")
def h100():
    return load_arch("h100-sxm")


def build(name, chip, config=None, **params):
    family = get_family(name)
    params, _, _ = split_params(family, {k: str(v) for k, v in params.items()})
    config = family.resolve_config(params, {k: str(v) for k, v in (config or {}).items()}, chip)
    return config, family.build(params, config, chip)


def test_torch_layernorm_reads_each_row_twice_in_128_thread_blocks(h100):
    rows, cols = 256, 4096
    _, trace = build("layernorm", h100, rows=rows, cols=cols, dtype="fp32", impl="torch")
    totals = tensor_totals(trace)
    assert trace.kernel.grid == [rows] and trace.kernel.resources.warps == 4
    assert totals["X", "read"] == 2 * rows * cols * 4
    assert totals["Y", "write"] == rows * cols * 4
    assert totals["W", "read"] == totals["B", "read"] == rows * cols * 4


def test_torch_layernorm_second_read_misses_the_l2_once_rows_outgrow_it(h100):
    """The resident rows between a row's two reads: 2112 x 4 KB fit the L2, 2112 x 64 KB do not."""
    def hbm_per_x_byte(cols):
        _, trace = build("layernorm", h100, rows=4096, cols=cols, dtype="fp32", impl="torch")
        return simulate_kernel(trace, h100).hbm_bytes / (4096 * cols * 4)

    assert hbm_per_x_byte(1024) == pytest.approx(2.0, rel=0.02)
    assert hbm_per_x_byte(16384) == pytest.approx(3.0, rel=0.02)


def test_torch_layernorm_of_odd_rows_runs_two_kernels(h100):
    _, trace = build("layernorm", h100, rows=64, cols=1022, dtype="bf16", impl="torch")
    assert trace.kernel.kernel_starts == [64]
    assert tensor_totals(trace)["X", "read"] == 2 * 64 * 1022 * 2


def test_torch_rmsnorm_is_one_kernel_per_eager_op(h100):
    rows, cols = 64, 4096
    _, bf16 = build("rmsnorm", h100, rows=rows, cols=cols, dtype="bf16", weight_dtype="fp32", impl="torch")
    _, fp32 = build("rmsnorm", h100, rows=rows, cols=cols, dtype="fp32", impl="torch")
    assert len(bf16.kernel.kernel_starts) + 1 == 8  # the two casts are kernels of their own
    assert len(fp32.kernel.kernel_starts) + 1 == 6
    totals = tensor_totals(bf16)
    elements = rows * cols
    big = sum(b for (tensor, _), b in totals.items() if tensor not in ("W", "rstd", "variance", "variance_eps"))
    # to fp32 6, pow 8, mean 4, mul 8, cast 6, mul by the fp32 weight 2 + 4 (the product promoted)
    assert big == 38 * elements


def test_liger_launches_one_row_per_program_with_its_warps(h100):
    config, trace = build("rmsnorm", h100, rows=64, cols=16384, impl="liger")
    assert config == {"block_rows": 1, "num_warps": 16} and trace.kernel.grid == [64]
    assert [calculate_settings(c) for c in (1000, 2048, 8192, 32768)] == [4, 8, 16, 32]
    with pytest.raises(InputError, match="block_rows"):
        build("rmsnorm", h100, {"block_rows": 2}, rows=64, cols=1024, impl="liger")
    with pytest.raises(InputError, match="65536"):
        build("layernorm", h100, rows=4, cols=70000, impl="liger")


def test_fp32_weights_double_the_weight_bytes(h100):
    _, bf16 = build("rmsnorm", h100, rows=8, cols=2048, dtype="bf16", impl="liger")
    _, fp32 = build("rmsnorm", h100, rows=8, cols=2048, dtype="bf16", weight_dtype="fp32", impl="liger")
    assert tensor_totals(fp32)["W", "read"] == 2 * tensor_totals(bf16)["W", "read"]


@pytest.mark.parametrize("impl", ["torch", "liger"])
def test_tpus_refuse_gpu_implementations(impl):
    with pytest.raises(InputError, match="impl"):
        build("layernorm", load_arch("tpu-v5e"), rows=64, cols=1024, impl=impl)


def test_torch_runs_its_own_launch(h100):
    with pytest.raises(InputError, match="num_warps"):
        build("layernorm", h100, {"num_warps": 8}, rows=64, cols=1024, impl="torch")
