"""``accelsim import profile`` on PyTorch profiler traces: a trace recorded on this CPU (host
ops, no device work) and the GPU-shaped H100 trace (kernels, launching ops, streams)."""

from __future__ import annotations

import json

import pytest

from accelsim.importers.profile import measured_step, read_profile
from tests.importers.profile_fixtures import KINETO_H100, TORCH_CPU


def _step(path, arch=None):
    return measured_step(read_profile(path), source=str(path), arch=arch, device=None, command="test", sha256="0")


@pytest.fixture(scope="module")
def h100():
    return _step(KINETO_H100, "h100-sxm")


def test_gemm_records_take_m_n_k_from_the_launching_mm(h100):
    gemms = {r["id"]: r for r in h100["records"] if r["family"] == "gemm"}
    qkv = gemms["gemm-bf16-8192x6144x4096--cublas"]
    assert qkv["params"] == {"M": 8192, "N": 6144, "K": 4096, "dtype": "bf16", "batch": 1, "impl": "cublas"}
    assert qkv["latency_kind"] == "device" and qkv["samples_s"] == [qkv["latency_s"]]
    assert qkv["kernels"][0].startswith("sm90_xmma_gemm_bf16bf16") and "aten::mm" in qkv["notes"]


def test_attention_params_come_from_the_sdpa_ops(h100):
    (attention,) = [r for r in h100["records"] if r["family"] == "attention"]
    assert attention["params"] == {"batch": 4, "heads": 16, "kv_heads": 16, "seq_q": 2048, "seq_kv": 2048,
                                   "head_dim": 128, "causal": True, "dtype": "bf16", "pass": "fwd", "impl": "fa2"}


def test_repeated_launches_are_one_record_with_every_sample(h100):
    (norm,) = [r for r in h100["records"] if r["family"] == "layernorm"]
    assert norm["params"] == {"rows": 8192, "cols": 4096, "dtype": "bf16", "impl": "torch"} and len(norm["samples_s"]) == 2


def test_every_kernel_keeps_its_launch_shape_stream_and_op(h100):
    kernels = h100["kernels"]
    assert len(kernels) == h100["step"]["kernels"] == 14
    flash = next(k for k in kernels if "flash_fwd_kernel" in k["name"])
    assert flash["grid"] == [16, 4, 16] and flash["block"] == [128, 1, 1] and flash["stream"] == "stream 7"
    assert flash["op"] == "aten::_flash_attention_forward"
    nccl = [k for k in kernels if k["class"] == "collective"]
    assert len(nccl) == 2 and {k["stream"] for k in nccl} == {"stream 20"}


def test_unmapped_kernels_are_listed_with_their_share(h100):
    (unmapped,) = h100["unmapped"]
    assert "reduce_kernel" in unmapped["name"] and unmapped["launches"] == 1
    assert unmapped["share"] == pytest.approx(unmapped["time_s"] / h100["step"]["kernel_time_s"])
    # nothing is dropped: every kernel has a record, is unmapped, or is listed as not recorded with why
    listed = sum(r["launches"] for r in h100["unmapped"] + h100["not_recorded"])
    assert listed + sum(len(r["samples_s"]) for r in h100["records"]) == len(h100["kernels"])
    assert {r["why"] for r in h100["not_recorded"]} == {"collective: no kernel family models it",
                                                          "host-copy: no kernel family models it"}


def test_provenance_names_the_device_and_versions(h100):
    assert h100["device"] == {"name": "NVIDIA H100 80GB HBM3", "kind": "gpu", "compute_capability": "9.0",
                              "multiprocessors": 132, "memory_bytes": 85031714816, "arch": "h100-sxm",
                              "slug": "h100-sxm", "index": 0}
    assert h100["provenance"]["versions"] == {"cuda_driver_version": "12040", "cuda_runtime_version": "12040",
                                              "cupti_version": "24"}


def test_a_cpu_run_imports_its_top_level_ops():
    step = _step(TORCH_CPU)
    assert step["provenance"]["host_work"] and step["device"]["kind"] == "cpu" and step["device"]["arch"] is None
    families = {r["family"]: r for r in step["records"]}
    assert set(families) == {"gemm", "attention", "layernorm", "softmax"}
    assert families["attention"]["params"] == {"batch": 2, "heads": 4, "kv_heads": 4, "seq_q": 64, "seq_kv": 64,
                                               "head_dim": 32, "causal": True, "dtype": "bf16", "pass": "fwd"}
    assert {r["params"]["N"] for r in step["records"] if r["family"] == "gemm"} == {384, 128}
    assert 0 < sum(u["share"] for u in step["unmapped"]) < 0.05  # views, permutes, the residual add


def test_the_cli_writes_the_step_and_says_what_is_unmapped(cli, tmp_path):
    out = tmp_path / "step.json"
    result = cli("import", "profile", str(KINETO_H100), "--arch", "h100-sxm", "-o", str(out))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"wrote {out}: measured step on NVIDIA H100 80GB HBM3 (h100-sxm)"
    assert lines[2] == "unmapped: 0.1% of the kernel time (1 kernel name; largest: reduce_kernel 0.1%)"
    written = json.loads(out.read_text())
    assert written["kind"] == "measured_step" and written["schema_version"] == 1
    again = tmp_path / "again.json"
    cli("import", "profile", str(KINETO_H100), "--arch", "h100-sxm", "-o", str(again))
    assert again.read_bytes() == out.read_bytes()  # deterministic


def test_a_calibrated_overlay_names_its_chip(cli, tmp_path):
    out = tmp_path / "step.json"
    assert cli("import", "profile", str(KINETO_H100), "--arch", "h100-sxm-calibrated", "-o", str(out)).code == 0
    assert json.loads(out.read_text())["device"]["arch"] == "h100-sxm"
