"""Family parameters from the launching op's recorded shapes, and the reasons none are taken."""

from __future__ import annotations

from accelsim.importers.profile_events import DeviceEvent, LaunchOp
from accelsim.importers.profile_params import attention_params, copy_params, elementwise_params, gemm_params, \
    norm_params, softmax_params, typed

BF16 = "c10::BFloat16"


def op(name, dims, types=None, values=()):
    return LaunchOp(name, tuple(tuple(d) if d is not None else None for d in dims),
                    tuple(types if types is not None else [BF16] * len(dims)), tuple(values))


def test_gemm_shapes_of_each_aten_op():
    assert gemm_params([op("aten::mm", [[16, 4096], [4096, 3584]])]) == \
        {"M": 16, "N": 3584, "K": 4096, "dtype": "bf16", "batch": 1}
    assert gemm_params([op("aten::addmm", [[3584], [16, 4096], [4096, 3584]])])["N"] == 3584
    assert gemm_params([op("aten::bmm", [[8, 128, 64], [8, 64, 256]])]) == \
        {"M": 128, "N": 256, "K": 64, "dtype": "bf16", "batch": 8}
    assert gemm_params([op("aten::linear", [[4, 2048, 4096], [6144, 4096]])]) == \
        {"M": 8192, "N": 6144, "K": 4096, "dtype": "bf16", "batch": 1}


def test_the_innermost_gemm_op_is_read():
    inner = op("aten::mm", [[8192, 4096], [4096, 6144]])
    outer = op("aten::linear", [[4, 2048, 4096], [6144, 4096]], types=["float", "float"])
    assert gemm_params([inner, outer])["dtype"] == "bf16"


def test_shapes_that_do_not_agree_are_a_reason_not_a_record():
    assert "do not agree on K" in gemm_params([op("aten::mm", [[16, 4096], [4095, 3584]])])
    assert "no input shapes" in gemm_params([op("aten::mm", [None, None])])
    assert "not a GEMM dtype" in gemm_params([op("aten::mm", [[2, 2], [2, 2]], types=["double", "double"])])
    assert "no GEMM op" in gemm_params([op("aten::add", [[2], [2]])])


def test_attention_of_sdpa_and_of_flash_attn_layouts():
    q = [2, 8, 1024, 64]
    sdpa = op("aten::_scaled_dot_product_flash_attention", [q, [2, 2, 1024, 64], [2, 2, 1024, 64], [], []],
              values=["", "", "", "0.", "False"])
    assert attention_params([sdpa]) == {"batch": 2, "heads": 8, "kv_heads": 2, "seq_q": 1024, "seq_kv": 1024,
                                        "head_dim": 64, "causal": False, "dtype": "bf16", "pass": "fwd"}
    flash = op("flash_attn::_flash_attn_forward", [[2, 1024, 8, 64]] * 3 + [[], [], []],
               values=["", "", "", "0.0", "0.125", "True"])
    assert attention_params([flash])["heads"] == 8 and attention_params([flash])["causal"] is True
    backward = op("aten::_scaled_dot_product_flash_attention_backward", [q, q, q, q] + [[]] * 8,
                  values=[""] * 11 + ["True"])
    assert attention_params([backward])["pass"] == "bwd-kernel"


def test_a_causal_mask_of_unequal_lengths_is_not_taken():
    sdpa = op("aten::scaled_dot_product_attention", [[1, 8, 1, 64], [1, 8, 512, 64], [1, 8, 512, 64], [], [], []],
              values=["", "", "", "", "0.", "True"])
    assert "top-left" in attention_params([sdpa])


def test_norms_and_softmax_rows_and_columns():
    ln = op("aten::native_layer_norm", [[4, 2048, 4096], [], [4096], [4096], []])
    assert norm_params([ln]) == {"rows": 8192, "cols": 4096, "dtype": "bf16"}
    softmax = op("aten::_softmax", [[64, 1000], [], []], values=["", "-1", "False"])
    assert softmax_params([softmax]) == {"rows": 64, "cols": 1000, "dtype": "bf16"}
    assert "not the last" in softmax_params([op("aten::_softmax", [[64, 1000], [], []], values=["", "0", "False"])])


def _event(name, ops, **kw):
    return DeviceEvent(name=name, kind=kw.pop("kind", "kernel"), device=0, stream="s", start_s=0.0, duration_s=1e-6,
                       ops=tuple(ops), **kw)


def test_elementwise_arrays_and_broadcasts():
    add = _event("vectorized_elementwise_kernel", [op("aten::add", [[4, 8], [4, 8], []], values=["", "", "1"])])
    assert elementwise_params(add) == {"elements": 32, "dtype": "bf16", "inputs": 2, "outputs": 1}
    broadcast = _event("elementwise_kernel", [op("aten::mul", [[4, 8], [8]])])
    assert "broadcast" in elementwise_params(broadcast)
    fill = _event("FillFunctor", [op("aten::fill_", [[1024], []])])
    assert elementwise_params(fill)["inputs"] == 0
    memset = _event("Memset (Device)", [], kind="memset", bytes=4096)
    assert elementwise_params(memset) == {"elements": 4096, "dtype": "int8", "inputs": 0, "outputs": 1}


def test_copies_count_bytes_unless_they_convert():
    assert copy_params(_event("Memcpy DtoD", [], kind="memcpy", bytes=2**20)) == {"bytes": 2**20}
    same = _event("direct_copy_kernel_cuda", [op("aten::copy_", [[1024, 1024], [1024, 1024], []])])
    assert copy_params(same) == {"bytes": 2 * 2**20}
    convert = _event("direct_copy_kernel_cuda", [op("aten::copy_", [[16], [16]], types=["float", BF16])])
    assert "converts" in copy_params(convert)


def test_a_kernel_name_gives_a_dtype_only_where_no_type_was_recorded():
    untyped = _event("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", [LaunchOp("aten::mm", ((16, 32), (32, 8)))])
    assert gemm_params(typed(untyped).ops)["dtype"] == "bf16"
    recorded = _event("sm90_xmma_gemm_bf16bf16", [op("aten::mm", [[16, 32], [32, 8]], types=["float", "float"])])
    assert typed(recorded) is recorded
