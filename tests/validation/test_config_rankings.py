"""``accelsim validate`` on records that name their config (as the Pallas suite writes them):
each record is predicted at its own config, the configs of one kernel are ranked (Kendall
tau-b), and a config the simulator refuses is listed instead of failing the report."""

from __future__ import annotations

import pytest

import measurement_format as fmt
from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.families.search import run_config
from accelsim.validate.compare import kendall_tau

GEMM = {"M": 2048, "N": 2048, "K": 2048, "dtype": "bf16", "batch": 1, "impl": "triton"}
CONFIGS = [
    {"block_m": 128, "block_n": 128, "block_k": 64, "group_m": 1, "split_k": 1, "num_warps": 4, "num_stages": 3},
    {"block_m": 128, "block_n": 256, "block_k": 64, "group_m": 1, "split_k": 1, "num_warps": 8, "num_stages": 3},
    {"block_m": 64, "block_n": 128, "block_k": 64, "group_m": 1, "split_k": 1, "num_warps": 4, "num_stages": 4},
    {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 1, "split_k": 1, "num_warps": 4, "num_stages": 2},
]
SPILLING_ROWWISE = ({"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": 8, "num_warps": 4})


def _record(family, params, config, latency_s):
    return {"id": fmt.record_id(family, params, "cfg" + "-".join(str(v) for v in config.values())),
            "family": family, "implementation": "test kernel", "params": params, "config": config,
            "latency_s": latency_s, "samples_s": [latency_s], "flops": fmt.nominal_flops(family, params),
            "bytes": fmt.min_bytes(family, params), "measured": True, "source": "test", "notes": ""}


def _file(family, records):
    return {"schema_version": 1, "kind": "measurements", "family": family,
            "device": {"name": "NVIDIA H100 80GB HBM3", "arch": "h100-sxm"},
            "provenance": {"date": None, "command": "test", "versions": {}, "clocks": {}, "source": "test"},
            "records": records}


def _predicted(params, config):
    chip = load_arch("h100-sxm")
    family = get_family("gemm")
    values = parse_values(family.params, params, "test")
    return run_config(family, values, family.resolve_config(values, config, chip), chip).sim.latency_s


def test_configs_are_ranked_and_refused_configs_listed(cli, tmp_path):
    latencies = [_predicted(GEMM, c) for c in CONFIGS]
    assert len(set(latencies)) > 1, "the configs must be told apart for this test to mean anything"
    gemm = [_record("gemm", GEMM, c, 1.1 * t) for c, t in zip(CONFIGS, latencies)]  # same order as predicted
    fmt.write_json_atomic(tmp_path / "m" / "gemm.json", _file("gemm", gemm))
    params, config = SPILLING_ROWWISE
    fmt.write_json_atomic(tmp_path / "m" / "rmsnorm.json", _file("rmsnorm", [_record("rmsnorm", params, config, 3e-5)]))
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(tmp_path / "m"), "-o", str(tmp_path / "r"))
    assert result.code == 0, result.err
    report = (tmp_path / "r" / "report.md").read_text()
    ranking = next(line for line in report.splitlines() if line.startswith("| h100-sxm gemm"))
    assert ranking.split("|")[2].strip() == str(len(CONFIGS))
    assert ranking.split("|")[3].strip() == "1.00"
    assert "## Records not simulated" in report
    assert "rmsnorm-bf16-4096x4096" in report.split("## Records not simulated")[1]


def test_kendall_tau_b_leaves_ties_out():
    assert kendall_tau([1, 2, 3], [5, 5, 6]) == pytest.approx(2 / (3 * 2) ** 0.5)
    assert kendall_tau([1, 2, 3], [4, 4, 4]) != kendall_tau([1, 2, 3], [4, 4, 4])  # nan: the prediction has no order


def test_implementations_are_ranked_apart(cli, tmp_path):
    latencies = [_predicted(GEMM, c) for c in CONFIGS[:2]]
    records = [_record("gemm", GEMM, c, t) for c, t in zip(CONFIGS[:2], latencies)]
    other = [dict(_record("gemm", GEMM, c, t), implementation="another kernel", id=f"other-{i}")
             for i, (c, t) in enumerate(zip(CONFIGS[:2], reversed(latencies)))]
    fmt.write_json_atomic(tmp_path / "m" / "gemm.json", _file("gemm", records + other))
    assert cli("validate", "--arch", "h100-sxm", "--measurements", str(tmp_path / "m"), "-o", str(tmp_path / "r")).code == 0
    rankings = [line for line in (tmp_path / "r" / "report.md").read_text().splitlines() if line.startswith("| h100-sxm gemm")]
    assert sorted(line.split("|")[3].strip() for line in rankings) == ["-1.00", "1.00"]
