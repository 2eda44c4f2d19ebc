"""Cross-check against XLA's own cost analysis of the same compiled module (recorded
beside the fixture when it was made): compute bytes plus collective traffic (read and
written once each) against XLA's 'bytes accessed'; matrix flops within XLA's flops."""

import json
from pathlib import Path

from accelsim.importers.hlo import lower_module, read_hlo, summary

FIXTURES = Path(__file__).parent / "fixtures"


def test_bytes_and_flops_agree_with_xla_cost_analysis():
    xla = json.loads((FIXTURES / "cpu_mlp_grad_dp2_tp4.cost.json").read_text())
    totals = summary(lower_module(read_hlo(FIXTURES / "cpu_mlp_grad_dp2_tp4.hlo.txt")))
    ours = totals["compute_bytes"] + 2 * totals["all-reduce_bytes"]
    assert abs(ours - xla["bytes_accessed"]) / xla["bytes_accessed"] < 0.02
    # XLA also counts converts and reductions inside collectives as flops; the dots are
    # the bulk: per device, two forward matmuls, the activation gradient through w2 and
    # the two weight gradients, each 8x64x32 (no input gradient is asked for).
    assert totals["matrix_flops"] == 5 * 2 * 8 * 64 * 32
    assert 0.8 * xla["flops"] < totals["matrix_flops"] + totals["vector_flops"] <= xla["flops"]
