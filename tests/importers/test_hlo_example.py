"""The shipped example (traces/system/transformer_step_dp2_tp4.*): the committed trace
is what the importer makes of the committed HLO, its flops match the model's closed
form, its collectives are the dp and tp groups, and it replays."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from accelsim.importers.hlo import lower_module, read_hlo, summary
from accelsim.system.trace import load_system_trace

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "traces" / "system"
HLO, TRACE = EXAMPLE / "transformer_step_dp2_tp4.hlo.txt", EXAMPLE / "transformer_step_dp2_tp4.json"

# The model of make_transformer_step.py, per device (dp=2, tp=4).
LAYERS, D, HEADS, FF, VOCAB, BATCH, SEQ, DP, TP = 2, 256, 8, 1024, 2048, 8, 128, 2, 4


def closed_form_matrix_flops() -> int:
    """Forward matmuls, times 3 for forward + activation and weight gradients."""
    tokens = BATCH // DP * SEQ
    layer_weights = (4 * D * D + 2 * D * FF) // TP
    attention = 2 * 2 * (BATCH // DP) * (HEADS // TP) * SEQ * SEQ * (D // HEADS)
    layer = 2 * tokens * layer_weights + attention
    unembed = 2 * tokens * D * VOCAB  # tied embedding, replicated over tp
    return 3 * (LAYERS * layer + unembed)


def test_committed_trace_is_the_import_of_the_committed_hlo(cli, tmp_path):
    rebuilt = tmp_path / "step.json"
    result = cli("import", "hlo", str(HLO), "--system", "dgx-h100", "-o", str(rebuilt))
    assert result.code == 0, result.err
    assert json.loads(rebuilt.read_text()) == json.loads(TRACE.read_text())


def test_matrix_flops_match_the_model():
    assert summary(lower_module(read_hlo(HLO)))["matrix_flops"] == closed_form_matrix_flops()


def test_collectives_are_the_tp_and_dp_groups():
    ops = load_system_trace(TRACE).programs[0].ops
    groups = {tuple(map(tuple, op.groups)) for op in ops if op.kind == "all-reduce"}
    tp = ((0, 1, 2, 3), (4, 5, 6, 7))
    dp = ((0, 4), (1, 5), (2, 6), (3, 7))
    assert groups == {tp, dp}
    count = lambda g: sum(op.kind == "all-reduce" and tuple(map(tuple, op.groups)) == g for op in ops)
    assert count(tp) == LAYERS * (2 + 2)  # Megatron: two per layer forward, two backward
    assert count(dp) == LAYERS + 1  # each layer's weight gradients, then the rest (embedding, norm)


def test_example_is_small():
    assert HLO.stat().st_size < 2_000_000 and TRACE.stat().st_size < 2_000_000


def test_example_replays(cli):
    result = cli("replay", str(TRACE), "--system", "dgx-h100", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["step_time_s"] > 0


@pytest.mark.slow
def test_live_hlo_from_installed_jax_imports_like_the_fixtures(tmp_path):
    """Regenerate the CPU fixtures with the installed jax and compare what the importer
    finds: catches drift between the HLO text of this jax and the committed fixtures."""
    fixtures = Path(__file__).parent / "fixtures"
    subprocess.run([sys.executable, str(fixtures / "make_fixtures.py"), str(tmp_path)], check=True, timeout=300)
    for name in ("cpu_mlp_grad_dp2_tp4", "cpu_shard_map_collectives"):
        live = lower_module(read_hlo(tmp_path / f"{name}.hlo.txt"))
        committed = lower_module(read_hlo(fixtures / f"{name}.hlo.txt"))
        assert not [k for k in live.counts if k.startswith("unknown")]
        assert summary(live)["matrix_flops"] == summary(committed)["matrix_flops"]
        comm = lambda p: sorted((op.kind, op.comm_bytes, op.groups, op.pairs) for op in p.ops
                                if op.kind not in ("compute", "done"))
        assert comm(live) == comm(committed)
    tpu = [lower_module(read_hlo(folder / "tpu_pallas_matmul.hlo.txt")).ops for folder in (tmp_path, fixtures)]
    assert [(op.cost.matrix_flops, op.cost.bytes) for op in tpu[0]] == [(op.cost.matrix_flops, op.cost.bytes)
                                                                        for op in tpu[1]]
