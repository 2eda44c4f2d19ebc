"""YAML nested deeper than any config needs: refused in one line naming the file and
line (or the ``--set`` field), before libyaml's recursive composer, which some 30,000
nested ``[`` crash outright (a segfault, no message)."""

from __future__ import annotations

import pytest

from accelsim.arch.loader import MAX_YAML_DEPTH, too_deep_line

GEMM = ("--kernel", "gemm", "--param", "M=256", "--param", "N=256", "--param", "K=256")
CRASHING = 50_000


def test_the_line_of_the_first_level_too_deep():
    deepest = MAX_YAML_DEPTH - 1  # lists inside the top-level mapping
    assert too_deep_line("a: " + "[" * deepest + "]" * deepest) is None
    assert too_deep_line("a: " + "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH) == 1
    assert too_deep_line("a: 1\nb: " + "[" * CRASHING) == 2
    block = "".join(f"{'  ' * i}k{i}:\n" for i in range(MAX_YAML_DEPTH + 5)) + "  " * (MAX_YAML_DEPTH + 5) + "x: 1"
    assert too_deep_line(block) == MAX_YAML_DEPTH + 1  # block style nests as deep


@pytest.mark.parametrize("flow, says", [
    ("[" * CRASHING, "deep.yaml:1: lists and mappings nested more than 100 deep"),
    ("{a: " * CRASHING, "deep.yaml:1: lists and mappings nested more than 100 deep"),
])
def test_a_deeply_nested_config_file_is_one_line(cli, tmp_path, flow, says):
    path = tmp_path / "deep.yaml"
    path.write_text("name: x\nextends: h100-sxm\nhbm: " + flow)
    result = cli("simulate", "--arch", str(path), *GEMM)
    assert result.code == 2 and result.err.count("\n") == 1 and says.replace(":1:", ":3:") in result.err, result.err


def test_a_deeply_nested_sweep_spec_is_one_line(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\nparameters: " + "[" * CRASHING)
    result = cli("sweep", str(path), "--dry-run", "-o", str(tmp_path / "out"))
    assert result.code == 2 and result.err.count("\n") == 1 and "spec.yaml:2: lists and mappings" in result.err
    assert not (tmp_path / "out").exists()


def test_a_deeply_nested_set_value_names_the_option_and_field(cli):
    result = cli("simulate", "--arch", "h100-sxm", *GEMM, "--set", "power.dvfs.boost=" + "[" * CRASHING)
    assert result.code == 2 and result.err == ("accelsim: error: --set: power.dvfs.boost: lists and mappings nested "
                                               "more than 100 deep in the value\n")
