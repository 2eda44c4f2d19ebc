"""JAX's splash attention kernels (Pallas TPU calls without a cost estimate) are priced
from Q and K: per phase a fixed number of matmuls over every (query, key) pair when the
block mask is not known (here: no ``data_next``/``block_mask`` pair of operands)."""

import textwrap

import pytest

from accelsim.importers.hlo import lower_module
from accelsim.importers.hlo_text import parse_module

B, H, S, D = 2, 4, 256, 128
QKV = f"bf16[{B},{H},{S},{D}]{{3,2,1,0}}"


def lowered(name: str, output: str, kernel_metadata: str = ""):
    attributes = f", frontend_attributes={{kernel_metadata={{{kernel_metadata}}}}}" if kernel_metadata else ""
    text = textwrap.dedent(f"""\
        HloModule m, is_scheduled=true, num_partitions=1
        ENTRY %main () -> f32[] {{
          %mask = s8[1,2,2]{{2,1,0}} parameter(0)
          %q = {QKV} parameter(1)
          %k = {QKV} parameter(2)
          %v = {QKV} parameter(3)
          %ids = s32[{B},{S}]{{1,0}} parameter(4)
          ROOT %{name} = {output} custom-call(%mask, %q, %k, %v, %ids), custom_call_target="tpu_custom_call"{attributes}, backend_config={{"custom_call_config":{{"body":"TUzv"}}}}
        }}
        """)
    return lower_module(parse_module(text))


PAIRS_X_D = B * H * S * S * D


@pytest.mark.parametrize(("name", "output", "matmuls"), [
    ("splash_mha_fwd_segmented_residuals.3", f"({QKV}, f32[{B},{H},{S},128]{{3,2,1,0}})", 2),
    ("splash_mha_dq_no_residuals.1", QKV, 3),
    ("splash_mha_dkv_segmented_no_residuals.1.remat", f"({QKV}, {QKV})", 4),
    ("splash_mha_dkv_no_residuals", f"(f32[1,{B},{H},{S},{D}]{{4,3,2,1,0}}, {QKV}, {QKV})", 5),
])
def test_each_phase_runs_its_matmuls_over_every_pair(name, output, matmuls):
    program = lowered(name, output)
    cost = program.ops[0].cost
    assert cost.matrix_flops == 2 * matmuls * PAIRS_X_D
    assert cost.matrix_dtype == "bf16"
    assert cost.vector_flops == B * H * S * S  # one exponential per pair
    phase = name.split("_")[2]
    assert program.counts == {f"splash_attention:{phase}": 1, f"splash_attention_dense:{phase}": 1}


def test_a_seq_minor_layout_takes_the_key_length_from_the_last_dimension():
    program = lowered("splash_mha_fwd", QKV, kernel_metadata='"xprof_metadata":"{\\"k_layout\\": 2}"')
    # K read as [.., head_dim=S, seq=D]: D keys of dimension S per query row of length D
    assert program.ops[0].cost.matrix_flops == 2 * 2 * (B * H * S * D // S) * D * S


def test_another_pallas_kernel_without_an_estimate_stays_unknown():
    program = lowered("my_attention_kernel", QKV)
    assert program.ops[0].cost.matrix_flops == 0
    assert program.counts == {"unknown_custom_call:tpu_custom_call": 1}
