"""``--bytes`` and ``--sweep-bytes`` also take sizes as nccl-tests' ``-b`` / ``-e`` do:
plain bytes, or K, M, G, T as powers of 1024; anything else is still one line, exit 2."""

import json

import pytest

from accelsim.cli.collective_cmd import parse_size, sweep_sizes
from accelsim.errors import InputError


@pytest.mark.parametrize("text, expected", [
    ("8", 8), ("3", 3), ("1K", 1024), ("64M", 64 * 2**20), ("8G", 8 * 2**30), ("8g", 8 * 2**30),
    ("1T", 2**40), ("64 MiB", 64 * 2**20), ("1 GB", 1e9),
])
def test_sizes_with_and_without_units(text, expected):
    assert parse_size(text, "--bytes") == expected


@pytest.mark.parametrize("text", ["8X", "1.5G", "0", "-8", "G", "9" * 30, "9" * 5000, "8193T"])
def test_other_sizes_are_refused(text):
    with pytest.raises(InputError, match="--bytes"):
        parse_size(text, "--bytes")


def test_an_nccl_tests_sweep_matches_the_unit_one():
    assert sweep_sizes("8:8G") == sweep_sizes("8B:8GiB")
    assert len(sweep_sizes("8:8G")) == 31


def test_the_command_line_takes_nccl_tests_sizes(cli):
    ours = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "64 MiB", "--json")
    theirs = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "64M", "--json")
    assert ours.code == theirs.code == 0 and json.loads(ours.out) == json.loads(theirs.out)
    bad = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "64X")
    assert bad.code == 2 and bad.err.count("\n") == 1 and "nccl-tests' 8, 64K, 8G" in bad.err
