"""``accelsim model``: a step replayed with its figures, its trace written and replayable
alike, a step that does not fit refused in one line."""

from __future__ import annotations

import json

import pytest


def test_json_figures_agree(cli, config):
    r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2", "--pp", "2",
            "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["devices"] == 8 and out["microbatches"] == 4 and out["layout"] == "TP2 PP2 DP2"
    assert out["mfu"] == pytest.approx(out["model_flops"] / (out["step_time_s"] * 8 * out["peak_flops_per_s"]))
    assert out["tokens_per_s"] == pytest.approx(8 * 512 / out["step_time_s"])
    assert out["memory"]["total_bytes"] <= out["memory"]["capacity_bytes"]
    parts = out["compute_s"] + out["exposed_comm_s"] + out["bubble_s"] + out["idle_s"]
    assert parts == pytest.approx(out["replay"]["compute_s"] + out["replay"]["exposed_comm_s"]
                                  + out["replay"]["idle_s"])


def test_written_trace_replays_alike(cli, config, tmp_path):
    trace = tmp_path / "step.json"
    r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2", "--pp", "2",
            "-o", str(trace), "--json")
    assert r.code == 0, r.err
    again = cli("replay", str(trace), "--system", "dgx-h100", "--json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["step_time_s"] == json.loads(r.out)["step_time_s"]


def test_pipeline_replays_alike_folded_or_not(cli, config, tmp_path):
    trace = tmp_path / "step.json"
    assert cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2", "--pp", "2",
               "--virtual-stages", "2", "-o", str(trace), "--no-replay").code == 0
    folded = json.loads(cli("replay", str(trace), "--system", "dgx-h100", "--json").out)
    unfolded = json.loads(cli("replay", str(trace), "--system", "dgx-h100", "--no-fold", "--json").out)
    assert folded["replayed_classes"] == 2 and unfolded["replayed_classes"] == 8
    assert folded["step_time_s"] == pytest.approx(unfolded["step_time_s"], rel=1e-9)


def test_text_output(cli, config):
    r = cli("model", config, "--system", "dgx-h100", "--mode", "decode", "--seq", "1024", "--batch", "4", "--tp", "4")
    assert r.code == 0, r.err
    assert "MFU / HFU" in r.out and "kv cache" in r.out and "1 microbatches" in r.out


def test_does_not_fit_is_refused(cli):
    r = cli("model", "llama3-405b", "--system", "dgx-h100", "--tp", "8")
    assert r.code == 2 and "does not fit" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize("args, words", [
    (("--tp", "0"), "--tp: expected a number at least 1, got 0"),
    (("--seq", "0"), "--seq: expected a number at least 1, got 0"),
    (("--batch", "0"), "--batch: expected a number at least 1, got 0"),
    (("--micro-batch", "99999999"), "--micro-batch: expected a number at most"),
    (("--tp", "3"), "--tp: attention heads (4) do not split evenly over TP 3"),
    (("--framework", "jax"), "model: argument --framework: invalid choice: 'jax'"),
    (("--dp", "16"), "layout: the layout (DP16) needs 16 devices"),
    (("--gemm-impl", "bogus", "--no-replay"), "--gemm-impl: expected one of: default, cublas"),
    (("--attention-impl", "x" * 1000), "--attention-impl: expected one of: default, fa3"),
    (("--sweep", "out", "--batch", "8", "--limit", "0"), "--limit: expected 1 to 256 layouts to replay, got 0"),
])
def test_bad_options_are_one_line_naming_the_option(cli, config, args, words):
    r = cli("model", config, "--system", "dgx-h100", *args)
    assert r.code == 2 and r.err.count("\n") == 1 and f"accelsim: error: {words}" in r.err, r.err
    assert len(r.err) <= 301


def test_an_attention_impl_the_chip_cannot_run_is_refused_before_anything_is_written(cli, config, tmp_path):
    trace = tmp_path / "step.json"
    for replay in ([], ["--no-replay"]):
        r = cli("model", config, "--system", "dgx-a100", "--tp", "4", "--attention-impl", "fa3", "-o", str(trace),
                *replay)
        assert r.code == 2 and r.err.startswith("accelsim: error: --attention-impl: impl=fa3 is a Hopper"), r.err
        assert not trace.exists()


def test_a_step_refused_while_replayed_leaves_no_trace(cli, config, tmp_path):
    """DeepGEMM on an A100 is refused by the GEMM kernels as the step replays."""
    trace = tmp_path / "step.json"
    r = cli("model", config, "--system", "dgx-a100", "--tp", "4", "--gemm-impl", "deepgemm", "-o", str(trace))
    assert r.code == 2 and "DeepGEMM runs on Hopper" in r.err and not trace.exists(), r.err
