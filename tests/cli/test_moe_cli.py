"""``accelsim simulate --system ... --moe MODE``: a MoE dispatch from the command line,
the same figures as ``simulate_moe``, and bad input as one line naming the option."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accelsim.arch.model import load_arch
from accelsim.network import build_topology
from accelsim.network.moe import Routing, simulate_moe
from tests.fuzzing import AWKWARD_TOKENS, fuzz_settings, refused_or_ok

ROUTING = ("--routing", "tokens=4096", "--routing", "token_bytes=7392", "--routing", "top_k=8",
           "--routing", "experts=256")
MOE = ("simulate", "--system", "dgx-h100", "--moe")


@pytest.fixture(scope="module")
def topo():
    return build_topology(load_arch("dgx-h100"))


@pytest.mark.parametrize("mode, kind", [("deepep", "dispatch"), ("deepep-ll", "combine")])
def test_the_json_is_simulate_moe_s_result(cli, topo, mode, kind):
    result = cli(*MOE, mode, *ROUTING, "--sm-budget", "24", "--json", *(["--combine"] if kind == "combine" else []))
    assert result.code == 0, result.err
    hbm = load_arch("h100-sxm").hbm
    expected = simulate_moe(topo, mode, routing=Routing(tokens=4096, token_bytes=7392, top_k=8, experts=256),
                            sm_budget=24, kind=kind, hbm_bytes_per_s=hbm.bandwidth_bytes_per_s * hbm.efficiency)
    shown = json.loads(result.out)
    assert shown.pop("system_note").startswith("dgx-h100 is dgx-h100-calibrated")
    assert shown == {"system": topo.name, "kind": kind, **expected.as_dict()}


def test_the_low_latency_kernels_hold_the_sms_deepep_launches_them_on(cli):
    result = cli(*MOE, "deepep-ll", *ROUTING)
    assert result.code == 0, result.err
    assert "SM budget      128" in result.out and "latency" in result.out


def test_a_traffic_matrix_moves_its_busiest_rank_s_bytes(cli, tmp_path):
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps({"bytes": [[0 if i == j else 1e6 * (i + 1) for j in range(8)] for i in range(8)]}))
    result = cli(*MOE, "nccl", "--traffic", str(path), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["nvlink_bytes_per_rank"] == 7 * 8e6


def test_a_combine_sends_the_dispatch_s_traffic_back(cli, tmp_path):
    """Rank 0 dispatches to every peer; in the combine every peer sends back to rank 0."""
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps({"bytes": [[1e6 if i == 0 and j else 0 for j in range(8)] for i in range(8)]}))
    dispatch = json.loads(cli(*MOE, "nccl", "--traffic", str(path), "--json").out)
    combine = json.loads(cli(*MOE, "nccl", "--traffic", str(path), "--combine", "--json").out)
    assert dispatch["nvlink_bytes_per_rank"] == 7e6  # rank 0 sends it all
    assert combine["nvlink_bytes_per_rank"] == 1e6  # each peer sends its one part back


@pytest.mark.parametrize("args, says", [
    ((*MOE, "bogus", *ROUTING), "--moe: unknown MoE all-to-all mode 'bogus'"),
    ((*MOE, "deepep", "--routing", "tokens=1"), "--routing: needs token_bytes, top_k, experts"),
    ((*MOE, "deepep", *ROUTING, "--routing", "tokens=0"), "--routing: tokens: expected a whole number from 1 to"),
    ((*MOE, "deepep", *ROUTING, "--routing", "experts=255"), "--routing: experts: 255 experts do not spread evenly"),
    ((*MOE, "deepep", *ROUTING, "--routing", "top_k=300"), "--routing: top_k: top_k must be 1 to 256"),
    ((*MOE, "deepep", *ROUTING, "--routing", "hidden=7168"), "--routing: unknown field 'hidden'"),
    ((*MOE, "deepep", "--routing", "tokens", "1"), "--routing: expected NAME=VALUE, got 'tokens'"),
    ((*MOE, "deepep", *ROUTING, "--sm-budget", "500"), "--sm-budget: an SM budget is at least 1 and at most the GPU's 132"),
    ((*MOE, "deepep", *ROUTING, "--bytes", "1M"), "--moe runs a MoE dispatch, which takes none of: --bytes"),
    ((*MOE, "nccl"), "--moe needs the router's choices (--routing NAME=VALUE) or a --traffic FILE"),
    (("simulate", "--moe", "nccl", *ROUTING), "--moe runs on a --system SYSTEM"),
    (("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "1M", "--sm-budget", "4"),
     "--sm-budget: options of --moe MODE on --system"),
    (("simulate", "--system", "dgx-h100", "--collective", "all-reduce", "--bytes", "1M", "--combine"),
     "--combine: options of --moe MODE on --system"),
    (("simulate", "--system", "tpu-v5e-4x4", "--moe", "nccl", *ROUTING), "--moe simulates GPU kernels"),
    (("simulate", "--system", "h100-ib-cluster", "--set", "nodes=64", "--moe", "nccl", *ROUTING),
     "--system: 'h100-ib-cluster' has 512 ranks; a MoE dispatch is simulated over at most 256"),
])
def test_bad_moe_input_is_one_line_naming_the_option(cli, args, says):
    result = cli(*args)
    assert result.code == 2 and result.err.count("\n") == 1 and says in result.err, result.err


FIELDS = ("tokens", "token_bytes", "top_k", "experts", "node_limit")
VALUES = st.one_of(AWKWARD_TOKENS, st.integers(-3, 2**31).map(str), st.sampled_from(["1", "8", "256", "4096", "007"]))


@fuzz_settings(25)
@given(mode=st.sampled_from(["nccl", "deepep", "deepep-ll"]),
       values=st.dictionaries(st.sampled_from(FIELDS), VALUES, min_size=3, max_size=5),
       budget=st.sampled_from([None, "0", "1", "24", "131", "132", "-5", "x"]))
def test_fuzzed_routing_is_simulated_within_the_links_or_refused_in_one_line(cli, topo, mode, values, budget):
    args = [*MOE, mode, *(a for name, v in values.items() for a in ("--routing", f"{name}={v}")), "--json"]
    result = cli(*args, *(["--sm-budget", budget] if budget is not None else []))
    if not refused_or_ok(result):
        return
    r = json.loads(result.out)
    egress = topo.links["gpu0->switch"].bandwidth_bytes_per_s
    assert 0 < r["latency_s"] and r["nvlink_bytes_per_rank"] / egress <= r["latency_s"]
