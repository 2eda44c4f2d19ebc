"""``accelsim simulate``: the --json contract, traces, timelines, what-if and bad input."""

import json

import pytest

from accelsim.families.gemm import FAMILY as GEMM
from accelsim.families.base import parse_values
from accelsim.arch.model import load_arch
from accelsim.trace.kernel import save_trace

CONTRACT_KEYS = {
    "latency_s", "flops", "hbm_bytes", "achieved_flops_per_s", "achieved_hbm_bytes_per_s",
    "bound", "utilization", "config", "arch", "sim_wall_s", "events",
}
GEMM_1K = ("--kernel", "gemm", "--param", "M=1024", "--param", "N=1024", "--param", "K=1024")


def test_json_output_keeps_the_contract_keys(cli):
    result = cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert CONTRACT_KEYS <= set(summary)
    assert summary["flops"] == 2 * 1024**3
    assert summary["arch"] == "h100-sxm"
    assert summary["latency_s"] > 0
    assert summary["config"]["block_m"] > 0


def test_text_output_names_the_bound(cli):
    result = cli("simulate", "--arch", "tpu-v5e", *GEMM_1K)
    assert result.code == 0
    assert "bound" in result.out and "latency" in result.out


def test_set_changes_the_prediction(cli):
    base = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--json").out)
    slow = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--json", "--set", "hbm.bandwidth=0.1 TB/s").out)
    assert slow["latency_s"] > 2 * base["latency_s"]
    assert slow["bound"] == "hbm"


def test_config_auto_is_no_slower_than_the_default(cli):
    default = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--json").out)
    auto = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--param", "config=auto", "--json").out)
    assert auto["latency_s"] <= default["latency_s"]
    assert auto["configs_searched"] > 1


def test_explicit_config_values_are_used(cli):
    summary = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--param", "block_m=64", "--json").out)
    assert summary["config"]["block_m"] == 64


def test_a_trace_file_replays_like_the_family(cli, tmp_path):
    chip = load_arch("h100-sxm")
    params = parse_values(GEMM.params, {"M": 1024, "N": 1024, "K": 1024}, "test")
    path = tmp_path / "gemm.json"
    save_trace(GEMM.build(params, GEMM.resolve_config(params, {}, chip), chip), path)
    from_file = json.loads(cli("simulate", "--arch", "h100-sxm", str(path), "--json").out)
    from_family = json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--json").out)
    assert from_file["latency_s"] == from_family["latency_s"]


def test_timeline_is_chrome_trace_json(cli, tmp_path):
    path = tmp_path / "t.json"
    assert cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--timeline", str(path)).code == 0
    events = json.loads(path.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    counters = [e for e in events if e["ph"] == "C"]
    assert any(e["tid"].startswith("SM") for e in spans)
    assert any("HBM" in e["name"] for e in counters)
    assert all(e["dur"] >= 0 for e in spans)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--kernel", "gemm", "--param", "M=x", "--param", "N=1", "--param", "K=1"), "M: expected an integer"),
        (("--kernel", "gemm", "--param", "M=1.5", "--param", "N=1", "--param", "K=1"), "M: expected an integer"),
        (("--kernel", "gemm", "--param", "M=1e400", "--param", "N=1", "--param", "K=1"), "M: expected an integer"),
        (("--kernel", "gemm", "--param", "N=1", "--param", "K=1"), "M: missing required parameter"),
        (("--kernel", "gemm", "--param", "M=1", "--param", "N=1", "--param", "K=1", "--param", "Q=2"), "Q: unknown parameter"),
        (("--kernel", "gemm", "--param", "M=1", "--param", "N=1", "--param", "K=1", "--param", "dtype=fp7"), "dtype: expected one of"),
        (("--kernel", "nosuch",), "unknown kernel family 'nosuch'"),
        (("--kernel", "gemm", "--param", "M1024"), "expected K=V"),
        ((), "give a kernel trace file or --kernel"),
        (("--kernel", "gemm", "--param", "M=8", "--param", "N=8", "--param", "K=8", "--param", "block_m=1048576"),
         "local memory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, args, fragment):
    result = cli("simulate", "--arch", "h100-sxm", *args)
    assert result.code == 2
    assert result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert fragment in result.err


def test_a_system_is_not_a_chip(cli):
    result = cli("simulate", "--arch", "dgx-h100", *GEMM_1K)
    assert result.code == 2
    assert "kernels run on a chip" in result.err


def test_timeline_into_a_missing_folder_fails_cleanly(cli, tmp_path):
    result = cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--timeline", str(tmp_path / "no" / "t.json"))
    assert result.code == 2
    assert "does not exist" in result.err


def test_a_config_with_hbm_queueing_reports_the_wait(cli):
    import json

    from accelsim.arch.model import load_arch

    args = ("simulate", "--kernel", "elementwise", "--param", "elements=16777216", "--param", "dtype=fp32",
            "--param", "block_elements=1024", "--param", "num_warps=8", "--json")
    queued = json.loads(cli(*args, "--arch", "h200-sxm-calibrated").out)
    plain = json.loads(cli(*args, "--arch", "h200-sxm").out)
    most = load_arch("h200-sxm-calibrated").hbm.queueing_latency_s  # at full load on an even read-write mix
    assert 0 < queued["hbm_queueing_s"] <= most and "hbm_queueing_s" not in plain
    text = cli(*args[:-1], "--arch", "h200-sxm-calibrated").out
    assert "HBM queueing" in text and "per load" in text


def test_a_whole_number_may_be_written_as_a_float(cli):
    plain = cli("simulate", "--arch", "h100-sxm", "--kernel", "copy", "--param", "bytes=1000000", "--json")
    floaty = cli("simulate", "--arch", "h100-sxm", "--kernel", "copy", "--param", "bytes=1e6", "--json")
    assert plain.code == floaty.code == 0
    assert json.loads(plain.out)["latency_s"] == json.loads(floaty.out)["latency_s"]


def test_a_trace_of_several_kernels_says_how_many(cli):
    decode = ("--kernel", "attention", "--param", "heads=32", "--param", "kv_heads=4", "--param", "seq_q=1",
              "--param", "seq_kv=32768", "--param", "split_kv=32")
    summary = json.loads(cli("simulate", "--arch", "h100-sxm", *decode, "--json").out)
    assert summary["kernels"] == 2 and summary["launch_overhead_s"] == 2 * load_arch("h100-sxm").launch_overhead_s
    assert "kernels" not in json.loads(cli("simulate", "--arch", "h100-sxm", *GEMM_1K, "--json").out)
    text = cli("simulate", "--arch", "h100-sxm", *decode).out
    assert "2, one after another (6 us of launches in the latency)" in text
