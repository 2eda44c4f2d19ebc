"""The measurement format's vocabulary, counting rules and validator."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import measurement_format as fmt

REPO = Path(__file__).resolve().parents[2]

GEMM = {"M": 128, "N": 256, "K": 512, "dtype": "bf16", "batch": 2}
ATTENTION = {"batch": 2, "heads": 8, "kv_heads": 2, "seq_q": 1024, "seq_kv": 1024, "head_dim": 128,
             "causal": False, "dtype": "bf16", "pass": "fwd"}


def _file(records):
    return {
        "schema_version": 1, "kind": "measurements", "family": "gemm",
        "device": {"name": "NVIDIA H200", "arch": "h200-sxm"},
        "provenance": {"date": None, "command": "x", "versions": {}, "clocks": {}, "source": "test"},
        "records": records,
    }


def _record(**changes):
    record = {
        "id": fmt.record_id("gemm", GEMM), "family": "gemm", "implementation": "torch.matmul (cuBLAS)",
        "params": dict(GEMM), "latency_s": 1e-4, "samples_s": [1e-4], "flops": fmt.nominal_flops("gemm", GEMM),
        "bytes": fmt.min_bytes("gemm", GEMM), "measured": True, "source": "test", "notes": "",
    }
    record.update(changes)
    return record


def test_gemm_counts():
    assert fmt.nominal_flops("gemm", GEMM) == 2 * 2 * 128 * 256 * 512
    assert fmt.min_bytes("gemm", GEMM) == 2 * 2 * (128 * 512 + 512 * 256 + 128 * 256)
    fp8 = dict(GEMM, dtype="fp8", batch=1)
    assert fmt.min_bytes("gemm", fp8) == 128 * 512 + 512 * 256 + 2 * 128 * 256  # bf16 output


def test_attention_counts_follow_flashattention():
    forward = 4 * 2 * 8 * 1024 * 1024 * 128
    assert fmt.nominal_flops("attention", ATTENTION) == forward
    assert fmt.nominal_flops("attention", dict(ATTENTION, causal=True)) == forward / 2
    assert fmt.nominal_flops("attention", dict(ATTENTION, **{"pass": "bwd"})) == 2.5 * forward
    q, kv = 2 * 8 * 1024 * 128, 2 * 2 * 1024 * 128
    assert fmt.min_bytes("attention", ATTENTION) == 2 * (2 * q + 2 * kv)


def test_copy_counts_read_and_write():
    assert fmt.min_bytes("copy", {"bytes": 1000}) == 2000
    assert fmt.nominal_flops("copy", {"bytes": 1000}) == 0


def test_elementwise_counts_every_array_once():
    triad = {"elements": 1000, "dtype": "fp64", "inputs": 2, "outputs": 1}
    assert fmt.min_bytes("elementwise", triad) == 3 * 1000 * 8
    assert fmt.nominal_flops("elementwise", triad) == 2000
    assert fmt.validate_params("elementwise", {**triad, "inputs": 0}) == []
    assert fmt.validate_params("elementwise", {**triad, "inputs": 0, "outputs": 0}) == [
        "params: expected at least one input or output array"]
    assert fmt.validate_params("elementwise", {**triad, "outputs": -1}) == [
        "params.outputs: expected an integer >= 0, got -1"]


@pytest.mark.parametrize(
    "name, arch",
    [
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA GH200 480GB", None),
        ("NVIDIA GH200 144G HBM3e", "gh200"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
        ("NVIDIA A100 80GB PCIe", None),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GB200", "gb200"),
        ("TPU v5 lite", "tpu-v5e"),
        ("AMD Instinct MI300X", "mi300x"),
        ("cpu", None),
    ],
)
def test_device_names_map_to_configs(name, arch):
    assert fmt.arch_for_device_name(name) == arch


def test_known_archs_are_shipped_configs():
    for arch in fmt.KNOWN_ARCHS:
        assert any((REPO / "arch_configs" / kind / f"{arch}.yaml").is_file() for kind in ("gpu", "tpu"))


def test_every_mapped_device_name_validates():
    # what arch_for_device_name returns must pass the file check (a TPU run was refused)
    targets = {arch for _, arch in fmt._ARCH_BY_DEVICE_NAME if arch is not None}
    assert targets <= set(fmt.KNOWN_ARCHS)


def test_record_ids():
    assert fmt.record_id("gemm", dict(GEMM, batch=1)) == "gemm-bf16-128x256x512"
    assert fmt.record_id("attention", dict(ATTENTION, causal=True)) == "attention-fwd-bf16-b2-h8kv2-q1024-kv1024-d128-causal"
    assert fmt.record_id("copy", {"bytes": 4 * 2**30}) == "copy-4GiB"
    assert fmt.record_id("softmax", {"rows": 4, "cols": 8, "dtype": "fp32"}, "liger") == "softmax-fp32-4x8--liger"


def test_a_valid_file_has_no_problems():
    assert fmt.validate_measurement_file(_file([_record()])) == []


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda f: f.update(schema_version=2), "schema_version"),
        (lambda f: f["records"][0]["params"].update(unknown_param=1), "params: expected keys"),
        (lambda f: f["records"][0]["params"].update(dtype="fp64"), "params.dtype"),
        (lambda f: f["records"][0].update(latency_s=0), "latency_s"),
        (lambda f: f["records"][0].update(source=""), "source"),
        (lambda f: f["records"][0].pop("notes"), "notes: missing"),
        (lambda f: f["records"].append(copy.deepcopy(f["records"][0])), "not unique"),
        (lambda f: f["device"].update(arch="h300"), "device.arch"),
        (lambda f: f["records"][0].update(latency_kind="wall"), "latency_kind: expected one of launches, device"),
        (lambda f: f["records"][0].update(conditions={"clock": None}), "conditions: expected an object"),
        (lambda f: f["records"][0].update(conditions={}), "conditions: expected an object"),
        (lambda f: f["records"][0].update(kernel_device_s=[{"name": "k", "device_s": 0}]), "kernel_device_s"),
        (lambda f: f["records"][0].update(kernel_device_s=[]), "kernel_device_s"),
        (lambda f: f["records"][0].update(cache_flush={"bytes": 256e6, "access": "memset"}), "cache_flush: expected"),
        (lambda f: f["records"][0].update(cache_flush={"bytes": 0, "access": "write"}), "cache_flush: expected"),
        # found by fuzzing: a unit slip the reader refuses, and values the checker crashed on
        (lambda f: f["records"][0].update(latency_s=10 ** 400), "latency_s: expected seconds above 0 and at most"),
        (lambda f: f["records"][0].update(samples_s=[1e6]), "samples_s"),
        (lambda f: f["records"][0].update(id=["a"]), "id: expected a non-empty string"),
        (lambda f: f.update(family=["gemm"]), "family"),
    ],
)
def test_validator_reports_each_problem(change, problem):
    data = _file([_record()])
    change(data)
    problems = fmt.validate_measurement_file(data)
    assert any(problem in p for p in problems), problems


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "gemm.json"
    fmt.write_json_atomic(path, {"a": 1})
    fmt.write_json_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["gemm.json"]


def test_params_are_the_simulators_family_parameters():
    families = pytest.importorskip("accelsim.families").FAMILIES
    for name, keys in fmt.FAMILY_PARAMS.items():
        if name not in families:
            continue
        simulator = {p.name: p for p in families[name].params}
        assert set(keys) <= set(simulator), name
        omitted = set(simulator) - set(keys)
        assert all(not simulator[k].required for k in omitted), f"{name}: records would lack {omitted}"
        if "dtype" in simulator:
            assert set(fmt.FAMILY_DTYPES[name]) == set(simulator["dtype"].choices), name


COLLECTIVE = {"collective": "all-reduce", "bytes": 64 * 2**20, "ranks": 8, "dtype": "fp32"}


def test_collective_ids_and_counts():
    assert fmt.record_id("collective", COLLECTIVE) == "all-reduce-fp32-64MiB-n8"
    assert fmt.min_bytes("collective", COLLECTIVE) == 64 * 2**20
    assert fmt.nominal_flops("collective", COLLECTIVE) == 0


@pytest.mark.parametrize("collective, factor", [("all-reduce", 2 * 7 / 8), ("all-gather", 7 / 8), ("reduce-scatter", 7 / 8)])
def test_bus_bandwidth_is_nccl_tests(collective, factor):
    algbw, busbw = fmt.bus_bandwidth(collective, 1000, 8, 1e-3)
    assert algbw == pytest.approx(1e6)
    assert busbw == pytest.approx(1e6 * factor)


def test_collective_params_are_validated():
    assert fmt.validate_params("collective", COLLECTIVE) == []
    problems = fmt.validate_params("collective", dict(COLLECTIVE, collective="all-to-all"))
    assert any("params.collective" in p for p in problems)


def test_latency_kinds_are_the_simulators():
    """measurement_format.py stands alone (no accelsim import on a GPU machine), so it keeps
    its own copy of the record's latency kinds; it must be validate's."""
    from accelsim.validate.compare import LATENCY_KINDS

    assert fmt.LATENCY_KINDS == LATENCY_KINDS


@pytest.mark.parametrize("conditions", [None, {"": "1"}, {"name": "h999"}, {"clock": "1500 MHz # boost"}])
def test_the_checker_and_validate_agree_on_conditions(tmp_path, conditions):
    from accelsim.errors import InputError
    from accelsim.validate.compare import read_measurements

    record = {**_record(), "conditions": conditions}
    assert any(p.startswith("conditions:") for p in fmt.validate_record(record, record["family"]))
    path = tmp_path / "m.json"
    data = _file([record])
    data["device"]["arch"] = "h100-sxm"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="records\\[0\\].conditions"):
        read_measurements([path])


def test_cache_flush_accesses_are_the_simulators():
    from accelsim.validate.compare import CACHE_FLUSH_ACCESSES

    assert fmt.CACHE_FLUSH_ACCESSES == CACHE_FLUSH_ACCESSES


def test_the_condition_rules_are_the_simulators():
    from accelsim.validate import compare

    assert fmt.NOT_CONDITIONS == compare.NOT_CONDITIONS
    assert fmt.CONDITION_PATH.pattern == compare.CONDITION_PATH.pattern
