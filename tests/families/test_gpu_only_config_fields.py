"""A TPU config is shown without the fields that mean something on a GPU only (num_warps,
group_m, split_k, ...): in simulate's table and --json, explore's ranking and a sweep's
``config`` metric. A GPU config is shown whole."""

from __future__ import annotations

import json

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import FAMILIES

GEMM = ("--kernel", "gemm", "--param", "M=1024", "--param", "N=1024", "--param", "K=1024")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_hides_num_warps_on_a_tpu_only(family):
    shown = FAMILIES[family].shown_config
    assert "num_warps" not in shown({"num_warps": 4, "num_stages": 2}, load_arch("tpu-v5e"))
    assert shown({"num_warps": 4, "num_stages": 2}, load_arch("h100-sxm")) == {"num_warps": 4, "num_stages": 2}


def test_simulate_shows_a_tpu_gemm_config_without_gpu_fields(cli):
    result = cli("simulate", "--arch", "tpu-v5e", *GEMM, "--json")
    config = json.loads(result.out)["config"]
    assert set(config) == {"block_m", "block_n", "block_k", "num_stages"}
    table = cli("simulate", "--arch", "tpu-v5e", *GEMM).out
    (line,) = [row for row in table.splitlines() if row.startswith("config ")]
    assert "num_warps" not in line and "group_m" not in line and "block_m=" in line


def test_a_gpu_config_keeps_its_warps(cli):
    config = json.loads(cli("simulate", "--arch", "h100", *GEMM, "--json").out)["config"]
    assert {"num_warps", "group_m", "split_k"} <= set(config)


def test_explore_ranks_tpu_configs_without_gpu_fields(cli):
    result = cli("explore", "--arch", "tpu-v5e", *GEMM, "--json")
    configs = [row["config"] for row in json.loads(result.out)["ranking"]]
    assert configs and not any({"num_warps", "group_m", "split_k"} & set(c) for c in configs)


def test_a_sweep_config_metric_on_a_tpu_has_no_warps(tmp_path):
    from accelsim.study.plan import plan_sweep
    from accelsim.study.sweep import run_sweep

    spec = tmp_path / "spec.yaml"
    spec.write_text("name: tpu\nbase: [tpu-v5e, h100-sxm]\nparameters: {}\nworkloads:\n"
                    "  - {kernel: gemm, params: {M: 1024, N: 1024, K: 1024}}\nmetrics: [latency_s, config]\n")
    outcome = run_sweep(plan_sweep(spec), tmp_path / "out", progress=False)
    rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    tpu, gpu = [row for row in rows[1:]]
    assert "block_m=" in tpu and "num_warps" not in tpu and "group_m" not in tpu
    assert "num_warps=" in gpu and outcome.ran == 2
