"""A GPU kernel of the GEMM and attention families is a Triton kernel: its block sizes and
``num_warps`` must be powers of two (Triton's ``validate_block_shape``, ``arange`` and
``CUDAOptions`` refuse others), so a config that Triton would not compile is refused in one
line naming the field. A TPU (Pallas) config has no such rule, nor has the elementwise
family, which also models CUDA kernels (gpu-stream at 544 threads per block)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.base import check_powers_of_two, parse_values


def _problem(family: str, given: dict) -> dict:
    """The family's parameters with defaults filled; where the family offers several
    implementations, its Triton kernel's (the one whose config is Triton's)."""
    params = get_family(family).params
    triton = {"impl": "triton"} if "impl" in {p.name for p in params} else {}
    return parse_values(params, given | triton)


GEMM = _problem("gemm", {"M": 1024, "N": 1024, "K": 1024})


@pytest.mark.parametrize("field, value", [("block_m", 100), ("block_n", 96), ("block_k", 48), ("num_warps", 3)])
def test_a_gemm_field_that_is_not_a_power_of_two_is_refused_on_a_gpu(field, value):
    with pytest.raises(InputError) as error:
        get_family("gemm").resolve_config(GEMM, {field: value}, load_arch("h100-sxm"))
    assert error.value.field == f"params.{field}" and f"got {value}" in error.value.message
    assert "power of two" in error.value.one_line() and len(error.value.one_line()) <= 300


@pytest.mark.parametrize("field", ["block_m", "block_n", "num_warps"])
def test_attention_block_sizes_and_warps_are_checked_too(field):
    assert field in {p.name for p in get_family("attention").config_params}
    problem = _problem("attention", {"heads": 8, "seq_q": 1024})
    with pytest.raises(InputError, match="power of two"):
        get_family("attention").resolve_config(problem, {field: 48}, load_arch("h100-sxm"))


def test_powers_of_two_pass_and_other_fields_are_free():
    check_powers_of_two({"block_m": 128, "num_warps": 8, "num_stages": 3, "group_m": 6}, ("block_m", "num_warps"))
    config = get_family("gemm").resolve_config(GEMM, {"block_m": 64, "group_m": 6, "num_stages": 3},
                                               load_arch("h100-sxm"))
    assert config["block_m"] == 64 and config["group_m"] == 6


def test_a_tpu_block_need_not_be_a_power_of_two():
    config = get_family("gemm").resolve_config(GEMM, {"block_m": 384}, load_arch("tpu-v5e"))
    assert config["block_m"] == 384


def test_cuda_style_elementwise_warps_stay_free_on_a_gpu():
    problem = _problem("elementwise", {"elements": 1 << 20, "dtype": "fp32"})
    config = get_family("elementwise").resolve_config(problem, {"num_warps": 17, "block_elements": 544},
                                                      load_arch("h100-sxm"))
    assert config["num_warps"] == 17


def test_the_cli_names_the_field_in_one_line(cli):
    result = cli("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--param", "impl=triton", "--param", "block_m=100")
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("accelsim: error: --param: block_m: expected a power of two") and \
        len(result.err.splitlines()) == 1


def test_a_library_kernel_keeps_its_own_block_sizes():
    """FlashAttention-3 is not a Triton kernel: its K/V blocks of 176 rows (hopper/tile_size.h) are its own."""
    problem = {"batch": 1, "heads": 8, "kv_heads": 0, "seq_q": 1024, "seq_kv": 0, "head_dim": 128, "causal": False,
               "dtype": "bf16", "pass": "fwd", "impl": "fa3"}
    assert not get_family("attention").compiled_by_triton(problem, load_arch("h100-sxm"))
    assert get_family("attention").compiled_by_triton({**problem, "impl": "triton"}, load_arch("h100-sxm"))
