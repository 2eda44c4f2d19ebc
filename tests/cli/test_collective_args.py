"""Collective options are checked as given: ranges against the system before they are
expanded, whole bytes, a protocol the algorithm runs, no collective options on a kernel."""

import pytest

SYSTEM = ("simulate", "--system", "dgx-h100", "--collective", "all-reduce")


@pytest.mark.parametrize("extra, expected", [
    (("--bytes", "64MiB", "--group", "0-999999999"), "--group: rank 999999999 is past the system's 8 ranks"),
    (("--bytes", "64MiB", "--group", "3-1"), "--group: range '3-1' runs backwards"),
    (("--bytes", "64MiB", "--group", ""), "--group: expected rank numbers"),
    (("--bytes", "64MiB", "--algorithm", "nvls/ll"), "--algorithm: nvls runs the simple protocol, not ll"),
    (("--bytes", "64MiB", "--algorithm", "ring/"), "--algorithm: expected NAME or NAME/PROTOCOL"),
    (("--bytes", "1.5 B"), "--bytes: size must be a whole number of bytes"),
    (("--bytes", "1e300 B"), "--bytes: size must be a whole number of bytes from 1 B to 8 PiB"),
    (("--bytes", ""), "--bytes"),
])
def test_bad_collective_options_are_one_line(cli, extra, expected):
    result = cli(*SYSTEM, *extra)
    assert result.code == 2 and expected in result.err and result.err.count("\n") == 1


def test_collective_options_on_a_kernel_are_refused(cli):
    result = cli("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M=64", "--param", "N=64",
                 "--param", "K=64", "--collective", "all-reduce", "--bytes", "1GiB")
    assert result.code == 2 and "--collective, --bytes apply to a collective on --system" in result.err


def test_replay_names_a_bad_algorithm_as_the_option(cli):
    from pathlib import Path

    trace = Path(__file__).resolve().parents[2] / "traces" / "system" / "transformer_step_dp2_tp4.json"
    result = cli("replay", str(trace), "--system", "dgx-h100", "--algorithm", "bogus")
    assert result.code == 2 and result.err.startswith("accelsim: error: --algorithm: unknown algorithm 'bogus'")


def test_a_one_chip_system_says_so(cli, tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text("schema_version: 1\nkind: torus\nname: one\ndisplay_name: one chip\nchip: tpu-v5e\n"
                    "shape: [1, 1]\nwraparound: [true, true]\n")
    result = cli("simulate", "--system", str(path), "--collective", "all-reduce", "--bytes", "1MiB")
    assert result.code == 2 and "'one' has 1 rank; a collective needs at least 2" in result.err


def test_a_value_that_looks_like_an_option_says_how_to_write_it(cli):
    result = cli(*SYSTEM, "--sweep-bytes", "-8B:8B")
    assert result.code == 2 and "write --sweep-bytes=VALUE" in result.err
    written = cli(*SYSTEM, "--sweep-bytes=-8B:8B")
    assert written.code == 2 and "--sweep-bytes: size must be a whole number of bytes" in written.err


@pytest.mark.parametrize("option", [("--arch", "", "--kernel", "gemm"), ("--system", "", "--collective", "all-reduce")])
def test_an_empty_config_name_is_named_as_empty(cli, option):
    result = cli("simulate", *option, "--bytes", "1MiB") if option[0] == "--system" else cli("simulate", *option)
    assert result.code == 2 and "the config name is empty" in result.err and result.err.count("\n") == 1
