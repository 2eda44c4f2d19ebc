"""A long value typed or written where a name is expected is echoed cut
(``errors.shown``), so that the rest of the line, what was expected, still fits in it:
the whole line is cut at 300 characters, and an echo of a few kB would push the
choices out of it."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.errors import MAX_SHOWN_CHARS
from accelsim.families import FAMILIES

LONG = "a" * 5000


def _sweep(write_yaml, workload: str) -> list[str]:
    return ["sweep", str(write_yaml("sweep.yaml", f"base: h100-sxm\nworkloads:\n  - {workload}\n")), "--dry-run"]


CASES = [  # (arguments, what the line must still say after the echo)
    (["simulate", "--arch", "h100-sxm", "--kernel", LONG], "expected one of: gemm, attention"),
    (["simulate", "--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=64", "--param", "N=64", "--param", "K=64",
      "--param", f"impl={LONG}"], "'aaa"),
    (["simulate", "--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=" + "9" * 4000, "--param", "N=64",
      "--param", "K=64"], "(the largest count a kernel trace holds), got 9999"),
    (["simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "1MiB", "--algorithm", LONG],
     "expected one of: auto, one-shot"),
    (["simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "1MiB", "--algorithm",
      f"ring/{LONG}"], "known: ll, ll128"),
    (["model", LONG, "--system", "dgx-h100"], "File name too long"),
    (["capture", "triton", LONG, "-o", "out.json"], "expected FILE.py:FUNCTION, got 'aaa"),
]


@pytest.mark.parametrize("args, still_says", CASES, ids=range(len(CASES)))
def test_a_long_value_is_echoed_cut(cli, args, still_says):
    result = cli(*args)
    _assert_cut(result, still_says)


def test_a_long_sweep_variable_is_echoed_cut(cli, write_yaml):
    result = cli(*_sweep(write_yaml, f"{{kernel: gemm, vars: {{n: [1]}}, params: {{M: ${LONG}, N: 1, K: 1}}}}"))
    _assert_cut(result, "this workload's vars are: n")


def _assert_cut(result, still_says: str) -> None:
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    line = result.err.rstrip("\n")
    assert len(line) <= 300 and not re.search(rf"(.)\1{{{MAX_SHOWN_CHARS}}}", line), line  # no long echo
    assert still_says in line, line


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=string.printable, min_size=MAX_SHOWN_CHARS, max_size=3000))
def test_an_unknown_name_of_any_length_leaves_room_for_the_known_ones(name):
    message = FAMILIES.unknown(name).message
    assert message.endswith(", ".join(FAMILIES))
    assert len(message) <= len(f"unknown kernel family ; expected one of: {', '.join(FAMILIES)}") + MAX_SHOWN_CHARS
