"""A timeline file holds results only: the same inputs write the same bytes (the
simulator's own wall time stays on stdout, out of the file)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [
    ("simulate", "--arch", "h100", str(ROOT / "traces" / "triton" / "matmul_512.json")),
    ("replay", str(ROOT / "traces" / "system" / "transformer_step_dp2_tp4.json"), "--system", "dgx-h100"),
])
def test_two_runs_write_the_same_timeline(cli, tmp_path, args):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert cli(*args, "--timeline", str(first)).code == 0
    assert cli(*args, "--timeline", str(second)).code == 0
    assert first.read_bytes() == second.read_bytes()
    assert b"sim_wall_s" not in first.read_bytes()
