"""The kernel-name rules (``accelsim/importers/profile_kernels.py``): public kernel names of
H100 runs map to the family and implementation they are, helpers are parts of their call,
and what no rule knows stays unmapped."""

from __future__ import annotations

import re

import pytest

from accelsim.importers.profile_kernels import RULES, classify, short_name

PUBLIC_NAMES = [
    # (kernel name as a profiler prints it, launching ops, class, impl, role)
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
     "cublas", ("aten::mm",), "gemm", "cublas", "main"),
    ("nvjet_tst_32x64_64x16_4x1_v_bz_TNN", ("aten::mm",), "gemm", "cublas", "main"),
    ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnt_align8_warpspecialized_cooperative_"
     "epi_tma", (), "gemm", "cutlass", "main"),
    ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnt_align8_warpspecialized_cooperative_"
     "epi_tma", ("aten::addmm", "aten::linear"), "gemm", "cublas", "main"),
    ("sm90_fp8_gemm_1d2d_impl", (), "gemm", "deepgemm", "main"),
    ("triton_tem_fused_mm_0", (), "gemm", "triton", "main"),
    ("splitKreduce_kernel", ("aten::mm",), "gemm", None, "part"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, (bool)0, "
     "(bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, (int)4, cutlass::bfloat16_t>>, "
     "(bool)0, (bool)1, (bool)0, (bool)0, (bool)0, (bool)1, (bool)0, (bool)0>(pytorch_flash::Flash_fwd_params)", (),
     "attention", "fa2", "main"),
    ("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false>>", (),
     "attention", "fa2", "main"),
    ("void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false>>", (),
     "attention", None, "part"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<"
     "2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>>>>>(flash::FlashAttnFwdSm90<...>::Params)", (),
     "attention", "fa3", "main"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", (),
     "attention", "cudnn", "main"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>::Params)",
     (), "attention", "mem-efficient", "main"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, ...)",
     ("aten::native_layer_norm",), "layernorm", "torch", "main"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, ...)",
     ("aten::_fused_rms_norm", "aten::rms_norm"), "rmsnorm", "torch", "main"),
    ("_rms_norm_forward_kernel", (), "rmsnorm", "liger", "main"),
    ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, ...)", (), "rmsnorm", None,
     "main"),
    ("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, false>(...)", (),
     "softmax", "torch", "main"),
    ("triton_per_fused__softmax_0", (), "softmax", "triton", "main"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >"
     "(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)", (), "elementwise", "torch", "main"),
    ("triton_poi_fused_mul_silu_2", (), "elementwise", "triton", "main"),
    ("Memcpy DtoD (Device -> Device)", (), "copy", "torch", "main"),
    ("Memcpy HtoD (Pageable -> Device)", (), "host-copy", None, "main"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", (), "collective", "nccl", "main"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, ...)", (), "collective", "custom",
     "main"),
    ("loop_multiply_fusion", (), "elementwise", "xla", "main"),
]


@pytest.mark.parametrize("name, ops, kernel_class, impl, role", PUBLIC_NAMES, ids=[short_name(n[0])[:40]
                                                                                   for n in PUBLIC_NAMES])
def test_public_kernel_names_map_to_their_family_and_implementation(name, ops, kernel_class, impl, role):
    mapped = classify(name, ops)
    assert mapped is not None, name
    assert (mapped.kernel_class, mapped.impl, mapped.role) == (kernel_class, impl, role)


@pytest.mark.parametrize("name", ["void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                                  "at::native::ArgMaxOps<float>, unsigned int, long, 4> >(...)", "fusion.12",
                                  "some_unknown_kernel_xyz", "void moeTopK<256>(float const*, bool const*)"])
def test_kernels_no_rule_knows_stay_unmapped(name):
    assert classify(name) is None


def test_every_rule_is_a_valid_pattern_with_a_reason():
    assert all(re.compile(rule.pattern) and rule.why and rule.role in ("main", "part") for rule in RULES)


def test_short_names_drop_templates_namespaces_and_arguments():
    assert short_name("void at::native::vectorized_elementwise_kernel<4, X<Y>>(int, Z)") == \
        "vectorized_elementwise_kernel"
    assert short_name("nvjet_tst_32x64_64x16_4x1_v_bz_TNN") == "nvjet_tst_32x64_64x16_4x1_v_bz_TNN"
    assert short_name("aten::mm") == "aten::mm"


def test_the_docs_table_is_the_rules_table():
    from tests.conftest import REPO

    doc = (REPO / "docs" / "import-profile.md").read_text(encoding="utf-8")
    for i, rule in enumerate(RULES):
        row = (f"| {i} | `{rule.pattern.replace('|', chr(92) + '|')}` | {rule.kernel_class} | {rule.impl or '-'} | "
               f"{rule.role} | {rule.why} |")
        assert row in doc, f"docs/import-profile.md lacks rule {i}: {row}"
