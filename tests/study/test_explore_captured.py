"""accelsim explore on real kernels: a Triton kernel captured once per candidate config,
and a Pallas kernel once per candidate block shape."""

from __future__ import annotations

import os

import pytest

from tests import conftest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported (see tests/capture)

MATMUL_TRITON = conftest.REPO / "kernels" / "triton" / "matmul.py"
MATMUL_PALLAS = conftest.REPO / "kernels" / "pallas" / "matmul.py"
TRITON_SPACE = """\
configs:
  - {block_m: 32, block_n: 32, block_k: 32, num_stages: 2, num_warps: 4}
  - {block_m: 64, block_n: 64, block_k: 32, num_stages: 3, num_warps: 4}
  - {block_m: 256, block_n: 256, block_k: 256, num_stages: 5, num_warps: 16}
"""
"""Three matmul configs; the last needs more shared memory than an H100 has."""


@pytest.mark.slow
def test_triton_configs_are_captured_and_ranked(cli, write_yaml):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    space = write_yaml("space.yaml", TRITON_SPACE)
    result = cli("explore", "--arch", "h100-sxm", "--kernel", f"{MATMUL_TRITON}:run", "--param", "M=128",
                 "--param", "N=128", "--param", "K=64", "--space", str(space))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "3 configs, 2 ran, 1 did not fit" in lines[0]
    assert lines[-1].split()[1:4] == ["-", "-", "does"]  # the one that needs too much shared memory, last
    assert "local memory" in lines[-1]


@pytest.mark.slow
def test_pallas_block_shapes_are_captured_and_ranked(cli, write_yaml):
    pytest.importorskip("jax")
    space = write_yaml("space.yaml", "grid:\n  block_m: [128, 256]\n  block_n: [256]\n  block_k: [256]\n")
    result = cli("explore", "--arch", "tpu-v5e", "--kernel", f"{MATMUL_PALLAS}:run", "--param", "M=512",
                 "--param", "N=512", "--param", "K=512", "--space", str(space), "--json")
    assert result.code == 0, result.err
    import json

    ranking = json.loads(result.out)["ranking"]
    assert sorted(r["config"]["block_m"] for r in ranking) == [128, 256]
    assert ranking[0]["latency_s"] <= ranking[1]["latency_s"]
    assert all(r["bound"] and r["programs"] > 0 for r in ranking)


@pytest.mark.slow
def test_a_real_triton_autotune_list_is_read_and_ranked(cli):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    target = conftest.REPO / "examples" / "explore" / "matmul_autotuned.py"
    result = cli("explore", "--arch", "h100-sxm", "--kernel", f"{target}:run", "--param", "M=64", "--param", "N=64",
                 "--param", "K=64", "--json")
    assert result.code == 0, result.err
    import json

    ranking = json.loads(result.out)["ranking"]
    assert len(ranking) == 8  # the tutorial's eight configs
    assert {"block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages"} <= set(ranking[0]["config"])
    assert all("latency_s" in r for r in ranking)


@pytest.mark.slow
def test_triton_configs_compiled_for_the_target_use_the_compilers_resources(cli, write_yaml):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    # 4 stages of 128x64 + 64x256 fp16 tiles would be 192 KiB, more than an A100 block may have;
    # on sm_80 Triton's pipeliner keeps one stage fewer in shared memory (144 KiB), so it fits
    space = write_yaml("space.yaml", """\
        configs:
          - {block_m: 64, block_n: 64, block_k: 32, num_stages: 3, num_warps: 4}
          - {block_m: 128, block_n: 256, block_k: 64, num_stages: 4, num_warps: 8}
        """)
    args = ("explore", "--arch", "a100-sxm4-80gb", "--kernel", f"{MATMUL_TRITON}:run", "--param", "M=256",
            "--param", "N=256", "--param", "K=256", "--param", "dtype=fp16", "--space", str(space), "--json")
    import json

    estimated = json.loads(cli(*args).out)["ranking"]
    assert "local memory" in estimated[1]["error"]
    result = cli(*args, "--compile-for", "sm_80")
    assert result.code == 0, result.err
    compiled = {r["config"]["block_m"]: r for r in json.loads(result.out)["ranking"]}
    assert compiled[128]["latency_s"] > 0 and compiled[128]["occupancy_limit"] == "local_memory"
    assert compiled[64]["latency_s"] > 0
    family = cli("explore", "--arch", "a100-sxm4-80gb", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--compile-for", "sm_80")
    assert family.code == 2 and "--compile-for applies to FILE.py:FUNCTION Triton kernels" in family.err
