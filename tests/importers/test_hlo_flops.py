"""Flops and bytes per instruction: dots, convolutions, GEMM custom calls and fusions
against closed forms."""

import textwrap

import pytest

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module


def module(body: str, extra: str = "") -> str:
    return textwrap.dedent(extra) + "\nENTRY %main () -> f32[] {\n" + textwrap.dedent(body) + "}\n"


def ops_of(text: str):
    return {op.name: op for op in lower_module(parse_module("HloModule m, num_partitions=1\n" + text)).ops}


@pytest.mark.parametrize(("b", "m", "n", "k"), [(1, 128, 256, 64), (4, 32, 48, 80), (3, 7, 5, 11)])
def test_batched_dot_is_2bmnk(b, m, n, k):
    ops = ops_of(module(f"""
        %x = bf16[{b},{m},{k}]{{2,1,0}} parameter(0)
        %y = bf16[{b},{k},{n}]{{2,1,0}} parameter(1)
        ROOT %d = f32[{b},{m},{n}]{{2,1,0}} dot(%x, %y), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
    """))
    d = ops["d"]
    assert d.cost.matrix_flops == 2 * b * m * n * k
    assert d.cost.matrix_dtype == "bf16"
    assert d.cost.bytes_read == 2 * (b * m * k + b * k * n)
    assert d.cost.bytes_written == 4 * b * m * n


def test_dot_contracting_several_dimensions():
    ops = ops_of(module("""
        %x = f32[6,4,5]{2,1,0} parameter(0)
        %y = f32[4,5,7]{2,1,0} parameter(1)
        ROOT %d = f32[6,7]{1,0} dot(%x, %y), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
    """))
    assert ops["d"].cost.matrix_flops == 2 * 6 * 7 * (4 * 5)


def test_convolution_is_2_out_times_window_times_input_features_inside_the_input():
    ops = ops_of(module("""
        %img = f32[8,32,32,16]{3,2,1,0} parameter(0)
        %ker = f32[3,3,16,64]{3,2,1,0} parameter(1)
        ROOT %c = f32[8,32,32,64]{3,2,1,0} convolution(%img, %ker), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
    """))
    inside = 31 + 32 + 31  # per spatial dimension: (output, window) pairs not on the padding
    assert ops["c"].cost.matrix_flops == 2 * (8 * 64) * inside * inside * 16


def test_grouped_convolution_counts_the_kernel_per_group():
    ops = ops_of(module("""
        %img = f32[1,16,16,32]{3,2,1,0} parameter(0)
        %ker = f32[3,3,1,32]{3,2,1,0} parameter(1)
        ROOT %c = f32[1,16,16,32]{3,2,1,0} convolution(%img, %ker), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=32
    """))
    inside = 15 + 16 + 15
    assert ops["c"].cost.matrix_flops == 2 * 32 * inside * inside * 1


def test_cublas_gemm_counted_from_shapes_without_workspace():
    ops = ops_of(module("""
        %a = bf16[1024,512]{1,0} parameter(0)
        %b = bf16[512,4096]{1,0} parameter(1)
        %g = (bf16[1024,4096]{1,0}, s8[4194304]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
        ROOT %o = bf16[1024,4096]{1,0} get-tuple-element(%g), index=0
    """))
    g = ops["g"]
    assert g.cost.matrix_flops == 2 * 1024 * 4096 * 512
    assert g.cost.bytes_written == 1024 * 4096 * 2


@pytest.mark.parametrize("config", ["{}", '{"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["x"]}}}',
                                    '{"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":[1.5]}}}'])
def test_cublas_gemm_without_readable_dimension_numbers_is_counted_as_assumed(config):
    text = "HloModule m, num_partitions=1\n" + module(f"""
        %a = bf16[1024,512]{{1,0}} parameter(0)
        %b = bf16[512,4096]{{1,0}} parameter(1)
        ROOT %g = (bf16[1024,4096]{{1,0}}, s8[4194304]{{0}}) custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={config}
    """)
    program = lower_module(parse_module(text))
    g = {op.name: op for op in program.ops}["g"]
    assert g.cost.matrix_flops == 2 * 1024 * 4096 * 512  # the lhs minor dimension contracted
    assert program.counts["contraction_assumed:__cublas$gemm"] == 1


def test_fusion_counts_inner_flops_and_boundary_bytes():
    ops = ops_of(module("""
        %x = bf16[64,32]{1,0} parameter(0)
        %w = bf16[32,16]{1,0} parameter(1)
        ROOT %f = f32[64,16]{1,0} fusion(%x, %w), kind=kOutput, calls=%fused
    """, """
        %fused (p0: bf16[64,32], p1: bf16[32,16]) -> f32[64,16] {
          %p0 = bf16[64,32]{1,0} parameter(0)
          %p1 = bf16[32,16]{1,0} parameter(1)
          %d = f32[64,16]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          %t = f32[64,16]{1,0} tanh(%d)
          %c = f32[64,16]{1,0} convert(%t)
          ROOT %a = f32[64,16]{1,0} add(%c, %d)
        }
    """))
    f = ops["f"]
    assert f.cost.matrix_flops == 2 * 64 * 16 * 32
    assert f.cost.vector_flops == 2 * 64 * 16  # tanh and add; convert moves data
    assert f.cost.bytes_read == 2 * (64 * 32 + 32 * 16)
    assert f.cost.bytes_written == 4 * 64 * 16


def test_fusion_reading_a_slice_counts_the_slice():
    ops = ops_of(module("""
        %stack = f32[10,256]{1,0} parameter(0)
        %i = s32[] parameter(1)
        ROOT %f = f32[1,256]{1,0} fusion(%stack, %i), kind=kLoop, calls=%fused
    """, """
        %fused (p0: f32[10,256], p1: s32[]) -> f32[1,256] {
          %p0 = f32[10,256]{1,0} parameter(0)
          %p1 = s32[] parameter(1)
          %z = s32[] constant(0)
          %s = f32[1,256]{1,0} dynamic-slice(%p0, %p1, %z), dynamic_slice_sizes={1,256}
          ROOT %e = f32[1,256]{1,0} exponential(%s)
        }
    """))
    assert ops["f"].cost.bytes_read == 256 * 4 + 4


def test_ragged_dot_is_2mnk_over_all_groups():
    """MoE grouped matmul: each of the m rows meets one group's [k, n] weights."""
    ops = ops_of(module("""
        %x = bf16[128,512]{1,0} parameter(0)
        %w = bf16[16,512,256]{2,1,0} parameter(1)
        %g = s32[16]{0} parameter(2)
        ROOT %rd = bf16[128,256]{1,0} ragged-dot(%x, %w, %g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
    """))
    assert ops["rd"].cost.matrix_flops == 2 * 128 * 256 * 512
    assert ops["rd"].cost.matrix_dtype == "bf16"


def test_ragged_contracting_dot_shares_the_contraction_among_groups():
    """Ragged in a contracting dimension (the weight gradient): one [m, n] result per
    group, each contracting only its group's slice of k."""
    ops = ops_of(module("""
        %x = f32[64,96]{1,0} parameter(0)
        %y = f32[96,32]{1,0} parameter(1)
        %g = s32[4]{0} parameter(2)
        ROOT %rd = f32[4,64,32]{2,1,0} ragged-dot(%x, %y, %g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
    """))
    assert ops["rd"].cost.matrix_flops == 2 * 64 * 32 * 96


def test_scaled_dot_is_a_dot_of_its_lhs_type():
    ops = ops_of(module("""
        %a = f8e4m3fn[256,128]{1,0} parameter(0)
        %b = f8e4m3fn[384,128]{1,0} parameter(1)
        %sa = f8e8m0fnu[256,4]{1,0} parameter(2)
        %sb = f8e8m0fnu[384,4]{1,0} parameter(3)
        ROOT %d = f32[256,384]{1,0} scaled-dot(%a, %b, %sa, %sb), lhs_contracting_dims={1}, rhs_contracting_dims={1}
    """))
    assert ops["d"].cost.matrix_flops == 2 * 256 * 384 * 128
    assert ops["d"].cost.matrix_dtype == "f8e4m3fn"


def test_fft_counts_as_xla_does():
    ops = ops_of(module("""
        %x = c64[64,256]{1,0} parameter(0)
        ROOT %f = c64[64,256]{1,0} fft(%x), fft_type=FFT, fft_length={256}
    """))
    assert ops["f"].cost.vector_flops == 8 * 64 * 256 * 8  # XLA's cost_analysis() gives 1048576


def test_ops_without_a_flops_rule_are_counted_as_unknown():
    text = "HloModule m, num_partitions=1\n" + module("""
        %a = f32[64,64]{1,0} parameter(0)
        ROOT %c = f32[64,64]{1,0} cholesky(%a), lower=true
    """)
    assert lower_module(parse_module(text)).counts["unknown_opcode:cholesky"] == 1
