"""A sequence step's error is located once, at the step's field (``sequence[1].params.M``),
not prefixed again by the workload's kind (``sequence: sequence: step 1: ...``); a named
sequence still leads with its name, which says which of the workloads it is."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError
from accelsim.study.plan import plan_sweep


def _message(path) -> str:
    with pytest.raises(InputError) as info:
        plan_sweep(path)
    assert info.value.field == "workloads[0]"
    return info.value.message


def test_a_kernel_steps_error_names_the_steps_field_once(spec_file):
    path = spec_file("""\
        base: h100-sxm
        workloads:
          - sequence:
              - {kernel: gemm, params: {M: 64, N: 64, K: 64}}
              - {kernel: gemm, params: {M: x, N: 64, K: 64}}
        """)
    assert _message(path) == "sequence[1].params.M: expected an integer, got 'x'"


def test_a_collective_steps_error_on_a_points_system_names_the_steps_field_once(spec_file):
    path = spec_file("""\
        base: dgx-h100
        workloads:
          - sequence: [{collective: all-gather, bytes: 1024, ranks: 64}]
        """)
    message = _message(path)
    assert message.startswith("point 0 (dgx-h100, no overrides): sequence[0].ranks: ranks must be between 2 and 8")
    assert message.count("sequence") == 1


def test_a_named_sequence_leads_with_its_name(spec_file):
    path = spec_file("""\
        base: h100-sxm
        workloads:
          - name: decode
            sequence: [{kernel: gemmm, params: {M: 64}}]
        """)
    assert _message(path) == "decode: sequence[0].kernel: unknown kernel family 'gemmm'; expected one of: gemm, " \
                             "attention, softmax, layernorm, rmsnorm, copy, elementwise"


def test_a_step_only_the_points_chip_refuses_fails_its_run_at_the_steps_field(cli, spec_file, tmp_path):
    path = spec_file("""\
        base: h100-sxm
        workloads:
          - sequence:
              - {kernel: gemm, params: {M: 64, N: 64, K: 64}}
              - {kernel: gemm, params: {M: 64, N: 8192, K: 8192, block_n: 1024}}
        """)
    assert cli("sweep", str(path), "-o", str(tmp_path / "out"), "--quiet").code == 0
    row = (tmp_path / "out" / "results.csv").read_text().splitlines()[1]
    assert ",error,sequence[1].params.block_m: block_m/block_n/block_k/num_stages need 589824 bytes" in row
