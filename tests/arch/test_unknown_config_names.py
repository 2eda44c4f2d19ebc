"""An unknown config name suggests the nearest built-in names (an alias with the config it
names) instead of listing all of them."""

from __future__ import annotations

import pytest

from accelsim.arch.loader import builtin_names, nearest_names


@pytest.mark.parametrize("typed, first", [
    ("h100-sxm5", "h100-sxm"),   # a letter too many
    ("H100", "h100 (h100-sxm)"),  # an alias, case aside
    ("v5p", "tpu-v5p"),           # part of a name
    ("dgx h100", "dgx-h100 (dgx-h100-calibrated)"),  # the plain name is the fitted overlay's alias
])
def test_the_nearest_name_comes_first(typed, first):
    assert nearest_names(typed)[0] == first


def test_suggestions_name_each_config_once_and_are_few():
    suggested = nearest_names("h100-sxm5")
    configs = [s.split(" (")[-1].rstrip(")") for s in suggested]
    assert len(configs) == len(set(configs)) and 1 <= len(suggested) <= 4


def test_the_error_line_suggests_and_stays_short(cli):
    result = cli("simulate", "--arch", "h100-sxm5", "--kernel", "gemm", "--param", "M=64", "--param", "N=64",
                 "--param", "K=64")
    (line,) = result.err.splitlines()
    assert result.code == 2 and "did you mean h100-sxm," in line and len(line) <= 300
    assert f"shows all {len(builtin_names())}" in line


def test_a_name_like_none_of_them_refers_to_the_list(cli):
    (line,) = cli("arch", "show", "zzz").err.splitlines()
    assert "did you mean" not in line and "'accelsim arch list'" in line and len(line) <= 300
