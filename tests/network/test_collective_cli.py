"""``accelsim simulate --system``: one size, sweeps, JSON, and bad input (one line, exit 2)."""

import json

import pytest


def test_one_size_as_json_has_the_nccl_tests_fields(cli):
    result = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "64 MiB",
                 "--algorithm", "ring", "--json")
    assert result.code == 0, result.err
    out = json.loads(result.out)
    assert out["algorithm"] == "ring" and out["size_bytes"] == 2**26
    assert out["algbw_bytes_per_s"] == pytest.approx(out["size_bytes"] / out["latency_s"])
    assert out["busbw_bytes_per_s"] == pytest.approx(out["algbw_bytes_per_s"] * 2 * 7 / 8)


def test_sweep_prints_one_row_per_doubling(cli):
    result = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--sweep-bytes", "8B:8GiB")
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line[:1].isdigit()]
    assert len(rows) == 31
    assert rows[0].split()[0] == "8" and rows[-1].split()[0] == str(8 * 2**30)
    busbw = [float(r.split()[-1]) for r in rows]
    assert busbw == sorted(busbw)


def test_sweep_as_json_is_a_list(cli):
    result = cli("simulate", "--system", "tpu-v5e-4x4", "--collective", "all-gather", "--sweep-bytes", "1KiB:1MiB",
                 "--json")
    assert [r["size_bytes"] for r in json.loads(result.out)] == [2.0**k for k in range(10, 21)]


def test_set_reaches_the_chip_of_a_system(cli):
    args = ("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "1 GiB", "--json")
    base = json.loads(cli(*args).out)
    slow = json.loads(cli(*args, "--set", "chip.interconnect.bandwidth_per_link=12.5 GB/s").out)
    assert slow["latency_s"] > 1.9 * base["latency_s"]


@pytest.mark.parametrize("extra, expected", [
    (("--system", "dgx-h100", "--collective", "all-scatter", "--bytes", "8B"), "unknown collective"),
    (("--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "8 XB"), "unknown unit 'XB'"),
    (("--system", "h100-sxm", "--collective", "all-reduce", "--bytes", "8B"), "is a chip"),
    (("--system", "dgx-a100", "--collective", "all-reduce", "--bytes", "8B", "--algorithm", "nvls"), "NVLS"),
    (("--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "8B", "--ranks", "9"), "--ranks"),
    (("--system", "dgx-h100", "--collective", "all-reduce", "--sweep-bytes", "8GiB:8B"), "MAX is below MIN"),
    (("--system", "dgx-h100", "--collective", "all-reduce"), "--bytes SIZE or --sweep-bytes"),
    (("--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "8B", "--algorithm", "ring/xx"), "unknown protocol"),
    (("--collective", "all-reduce", "--bytes", "8B"), "--arch CHIP"),
])
def test_bad_input_is_one_line_and_exit_2(cli, extra, expected):
    result = cli("simulate", *extra)
    assert result.code == 2
    assert expected in result.err and result.err.count("\n") == 1


def test_group_and_new_kinds_from_the_command_line(cli):
    out = json.loads(cli("simulate", "--system", "tpu-v5e-4x4", "--collective", "all-to-all", "--bytes", "1 MiB",
                         "--group", "0-3", "--json").out)
    assert out["ranks"] == 4 and out["algorithm"] == "direct"
    out = json.loads(cli("simulate", "--system", "h100-ib-cluster", "--collective", "send-recv", "--bytes", "1 GiB",
                         "--group", "0,8", "--json").out)
    assert out["busbw_bytes_per_s"] < 50e9  # one NIC of 400 Gb/s
    bad = cli("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "8B", "--group", "0,x")
    assert bad.code == 2 and "--group" in bad.err
