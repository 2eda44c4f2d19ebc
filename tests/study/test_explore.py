"""accelsim explore: configs ranked by predicted latency, with why; bad candidates kept last."""

from __future__ import annotations

import textwrap

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import autotune
from accelsim.study.explore import autotune_configs, explore_family

GEMM = {"M": 1024, "N": 1024, "K": 1024, "dtype": "bf16", "batch": 1, "groups": 1}


def test_family_space_is_ranked_fastest_first_like_the_autotuner():
    chip = load_arch("tpu-v5e")
    family = get_family("gemm")
    ranked = explore_family(family, dict(GEMM), chip)
    latencies = [c.latency_s for c in ranked]
    assert latencies == sorted(latencies)
    assert len(ranked) == len(family.config_space(dict(GEMM), chip))
    assert ranked[0].config == autotune(family, dict(GEMM), chip)[0].config


def test_a_familys_scoped_values_shape_its_space_as_for_the_autotuner(write_yaml):
    """A chip whose GEMMs cannot multicast (``family_values``) ranks no clustered GEMM config,
    and its winner is the one ``config=auto`` picks."""
    chip = load_arch(str(write_yaml("h100-gemm-unicast.yaml", """\
        extends: h100-sxm
        name: h100-gemm-unicast
        family_values:
          gemm:
            shared_cache.multicast: {value: 1, basis: estimate, source: test}
        """)))
    family = get_family("gemm")
    ranked = explore_family(family, dict(GEMM), chip)
    assert all(c.config.get("cluster", 1) == 1 for c in ranked)
    assert ranked[0].config == autotune(family, dict(GEMM), chip)[0].config


def test_a_candidate_that_does_not_fit_is_kept_last_with_its_reason():
    chip = load_arch("h100-sxm")
    space = [{"block_m": 256, "block_n": 256, "block_k": 256, "num_stages": 5},
             {"block_m": 128, "block_n": 128, "block_k": 64}, {"block_m": 64, "block_n": 64, "block_k": 64}]
    ranked = explore_family(get_family("gemm"), dict(GEMM), chip, space)
    assert [c.sim is not None for c in ranked] == [True, True, False]
    assert "local memory" in ranked[2].error
    assert ranked[0].latency_s <= ranked[1].latency_s
    assert ranked[0].config["group_m"] == 8  # defaults filled in for what the candidate leaves out


def test_cli_table_and_outputs(cli, tmp_path, write_yaml):
    space = write_yaml("space.yaml", """\
        grid:
          block_m: [128, 256]
          block_n: [128, 256]
          block_k: [256]
        """)
    out = tmp_path / "ranking"
    result = cli("explore", "--arch", "tpu-v5e", "--kernel", "gemm", "--param", "M=2048", "--param", "N=2048",
                 "--param", "K=2048", "--space", str(space), "--top", "3", "-o", str(out))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "4 configs, 4 ran" in lines[0]
    assert lines[1].split()[:4] == ["RANK", "LATENCY", "VS", "BEST"]
    assert [line.split()[0] for line in lines[3:6]] == ["1", "2", "3"]
    assert lines[3].split()[3] == "1.00x"
    assert "matrix_unit" in lines[3] and "programs" in lines[3]
    assert {p.name for p in out.iterdir()} == {"ranking.csv", "ranking.md", "ranking.png"}
    assert len((out / "ranking.csv").read_text().splitlines()) == 5


def test_cli_bad_space_is_located(cli, write_yaml):
    space = write_yaml("space.yaml", "grid:\n  block_m: [128]\nconfig: []\n")
    result = cli("explore", "--arch", "tpu-v5e", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--space", str(space))
    assert result.code == 2
    assert f"{space}:3: config: unknown field" in result.err


@pytest.mark.parametrize("value, expected", [("abc", "expected an integer, got 'abc'"), ("0", "expected an integer >= 1")])
def test_a_wrongly_typed_space_value_is_refused_not_ranked(cli, write_yaml, value, expected):
    space = write_yaml("space.yaml", f"configs:\n  - {{block_m: 64}}\n  - {{block_m: {value}}}\n")
    result = cli("explore", "--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--space", str(space))
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"--space: candidate 2.block_m: {expected}" in result.err


def test_a_space_past_the_cap_is_refused_before_it_is_built(cli, write_yaml):
    fields = ("block_m", "block_n", "block_k", "num_stages", "num_warps", "group_m", "split_k")
    space = write_yaml("space.yaml", "grid:\n" + "".join(f"  {f}: [{', '.join(str(2**i) for i in range(1, 12))}]\n"
                                                          for f in fields))
    result = cli("explore", "--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--space", str(space))
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"{space}" in result.err and "19,487,171 configs; at most 100,000" in result.err


def test_triton_autotune_configs_become_keyword_arguments(tmp_path):
    # a stand-in for @triton.autotune: an object with .configs of Config-like records
    module = tmp_path / "tuned.py"
    module.write_text(textwrap.dedent("""\
        class Config:
            def __init__(self, kwargs, num_warps=None, num_stages=None):
                self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

        class Autotuner:
            configs = [Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=3),
                       Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8)]

        kernel = Autotuner()

        def run(M, BLOCK_M=64):
            return M
        """))
    assert autotune_configs(str(module), "run") == [
        {"block_m": 64, "block_n": 32, "num_warps": 4, "num_stages": 3},
        {"block_m": 128, "block_n": 64, "num_warps": 8},
    ]


def test_a_space_naming_an_unknown_config_field_is_refused(cli, write_yaml):
    path = write_yaml("space.yaml", """\
        grid:
          block_m: [64, 128]
          bogus: [1]
        """)
    result = cli("explore", "--arch", "h100", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--space", str(path))
    assert result.code == 2 and "--space: 'bogus': not a gemm config field" in result.err


def test_a_problem_no_config_can_run_names_why(cli):
    """No config fits because the chip has no fp8 matrix rate: explore says so, as
    simulate does, rather than only that nothing fits."""
    result = cli("explore", "--arch", "a100-sxm4-80gb", "--kernel", "gemm", "--param", "M=1024", "--param", "N=1024",
                 "--param", "K=1024", "--param", "dtype=fp8")
    assert result.code == 2
    assert "dtype" in result.err and "no matrix-unit rate for fp8" in result.err
