"""``--param M 1024`` (the ``=`` forgotten) is named as such, not as the error argparse
would give for the stray value (a trace file as well as --kernel, an unrecognised argument)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("argv, fix", [
    (("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M", "1024", "--param", "N=64"), "--param M=1024"),
    (("explore", "--arch", "h100", "--kernel", "gemm", "--param", "K", "64"), "--param K=64"),
    (("arch", "show", "h100", "--set", "hbm.bandwidth", "8 TB/s"), "--set 'hbm.bandwidth=8 TB/s'"),
])
def test_a_forgotten_equals_sign_is_named(cli, argv, fix):
    result = cli(*argv)
    assert result.code == 2 and result.out == ""
    (line,) = result.err.splitlines()
    assert "the '=' is missing" in line and f"(write {fix})" in line and len(line) <= 300


def test_an_option_without_a_value_after_it_says_only_what_is_missing(cli):
    result = cli("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M", "--param", "N=64")
    assert result.code == 2 and result.err.strip() == "accelsim: error: --param: expected K=V, got 'M': the '=' is missing"
