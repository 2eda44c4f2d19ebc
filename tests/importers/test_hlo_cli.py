"""``accelsim import hlo``: writes a valid system trace that ``accelsim replay`` runs."""

from pathlib import Path

from accelsim.system.trace import load_system_trace

FIXTURES = Path(__file__).parent / "fixtures"


def test_import_then_replay(cli, tmp_path):
    out = tmp_path / "step.json"
    result = cli("import", "hlo", str(FIXTURES / "cpu_shard_map_collectives.hlo.txt"), "--system", "dgx-h100",
                 "-o", str(out))
    assert result.code == 0, result.err
    assert "8 devices" in result.out and "conditionals_costliest_branch x1" in result.out
    trace = load_system_trace(out)
    kinds = {op.kind for op in trace.programs[0].ops}
    assert {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"} <= kinds
    replayed = cli("replay", str(out), "--system", "dgx-h100", "--json")
    assert replayed.code == 0, replayed.err


def test_max_ops_folds_loops(cli, tmp_path):
    out = tmp_path / "step.json"
    result = cli("import", "hlo", str(FIXTURES / "cpu_shard_map_collectives.hlo.txt"), "--system", "dgx-h100",
                 "--max-ops", "10", "-o", str(out))
    assert result.code == 0, result.err
    assert "folded_while_loops x1" in result.out
    names = [op.name for op in load_system_trace(out).programs[0].ops]
    assert any(".x5/" in name for name in names)


def test_types_the_system_has_no_rate_for_run_at_a_wider_one(cli, tmp_path):
    out = tmp_path / "step.json"
    result = cli("import", "hlo", str(FIXTURES / "gpu_async_handwritten.hlo.txt"), "--system", "tpu-v5e-4x4",
                 "-o", str(out))
    assert result.code == 0, result.err
    assert "dtype_fallback:matrix:fp8->bf16 x1" in result.out  # v5e's MXU has no fp8 rate
    fp8_gemm = next(op for op in load_system_trace(out).programs[0].ops if op.name == "fp8")
    assert fp8_gemm.dtype == "bf16" and fp8_gemm.unit == "matrix"


def test_max_ops_past_a_million_is_refused(cli, tmp_path):
    result = cli("import", "hlo", str(FIXTURES / "cpu_shard_map_collectives.hlo.txt"), "--system", "dgx-h100",
                 "--max-ops", "99999999999999", "-o", str(tmp_path / "x.json"))
    assert result.code == 2 and "--max-ops: expected an op count from 1 to 1,000,000" in result.err
