"""A kernel family's error names the field that gave the value: ``--param: NAME`` where the
command line gave it, the file and ``programs[p].ops[i].params.NAME`` where a system
trace's family op did, ``workloads[w]: ... params.NAME`` in a sweep spec. The families
name ``params.NAME`` only; the CLI and the readers of files say where that came from."""

from __future__ import annotations

import json

import pytest

GEMM = {"M": 1024, "N": 1024, "K": 1024}

CASES = [  # (family, params, the field named, what the error says)
    ("gemm", {**GEMM, "foo": 2}, "foo", "unknown parameter; expected one of: M, N, K"),
    ("gemm", {**GEMM, "M": "abc"}, "M", "expected an integer, got 'abc'"),
    ("gemm", {"N": 1024, "K": 1024}, "M", "missing required parameter"),
    ("gemm", {**GEMM, "config": "fast"}, "config", "expected 'auto', got 'fast'"),
    ("gemm", {**GEMM, "impl": "triton", "block_m": 100}, "block_m", "expected a power of two on a GPU"),
    ("gemm", {**GEMM, "block_m": 100}, "block_m", "a warp-specialized tile is whole MMA instructions"),
    ("gemm", {**GEMM, "block_n": 1024}, "block_m", "block_m/block_n/block_k/num_stages need 589824 bytes"),
    ("gemm", {**GEMM, "impl": "deepgemm"}, "dtype", "DeepGEMM's GEMMs take fp8 inputs"),
    ("attention", {"heads": 12, "kv_heads": 8, "seq_q": 1024}, "kv_heads", "heads=12 is not a multiple of kv_heads=8"),
    ("copy", {"bytes": 2**20, "num_warps": 3}, "num_warps", "expected one of: 1, 2, 4"),
    ("elementwise", {"elements": 1024, "dtype": "fp32", "inputs": 0, "outputs": 0}, "inputs", "expected at least one input or output"),
    ("rmsnorm", {"rows": 1024, "cols": 1024, "num_warps": 3}, "num_warps", "expected one of: 1, 2, 4"),
]


def _flags(params: dict) -> list[str]:
    return [arg for key, value in params.items() for arg in ("--param", f"{key}={value}")]


@pytest.mark.parametrize("family, params, field, says", CASES)
def test_the_command_line_names_the_param_option(cli, family, params, field, says):
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", family, *_flags(params))
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith(f"accelsim: error: --param: {field}: {says}"), result.err


@pytest.mark.parametrize("family, params, field, says", CASES)
def test_a_system_trace_names_its_file_and_the_ops_field(cli, tmp_path, family, params, field, says):
    path = tmp_path / "step.json"
    op = {"name": "k", "kind": "compute", "family": family, "params": params}
    path.write_text(json.dumps({"schema_version": 1, "kind": "system_trace", "name": "t", "num_devices": 1,
                                "programs": [{"name": "p", "devices": [0], "ops": [op]}]}))
    result = cli("replay", str(path), "--system", "dgx-h100")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith(f"accelsim: error: {path}: programs[0].ops[0].params.{field}: {says}"), result.err


def test_a_sweep_spec_names_the_workloads_params_field(cli, write_yaml):
    path = write_yaml("sweep.yaml", "base: h100-sxm\nworkloads:\n  - kernel: gemm\n"
                                    "    params: {M: 1024, N: 1024, K: 1024, config: fast}\n")
    result = cli("sweep", str(path), "--dry-run")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "workloads[0]: gemm M=1024 N=1024 K=1024 config=fast: params.config: expected 'auto', got 'fast'" in result.err
    assert "--param" not in result.err


def test_an_unknown_family_names_the_option_or_the_field(cli, tmp_path, write_yaml):
    assert cli("simulate", "--arch", "h100-sxm", "--kernel", "gemmm").err.startswith(
        "accelsim: error: --kernel: unknown kernel family 'gemmm'")
    path = write_yaml("sweep.yaml", "base: h100-sxm\nworkloads:\n  - {kernel: gemmm, params: {M: 1}}\n")
    assert "workloads[0]: gemmm M=1: kernel: unknown kernel family 'gemmm'" in cli("sweep", str(path), "--dry-run").err


def test_a_kernel_of_too_many_programs_names_the_params(cli):
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", "copy", "--param", f"bytes={2**46}",
                 "--param", "block_bytes=4096")
    assert result.code == 2 and result.err.startswith("accelsim: error: --param: the kernel would have"), result.err
