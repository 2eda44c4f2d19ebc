"""``capture --family NAME`` marks a captured kernel as one of the built-in families
(``metadata.family``): a calibrated chip's values scoped to that family then apply to
the trace as they do to the family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "triton"
OVERLAY = "a100-sxm4-80gb-calibrated"
"""Its HBM efficiency and launch overhead are scoped to the norm families."""


def test_an_unknown_family_is_refused_before_capturing(cli, tmp_path):
    out = tmp_path / "t.json"
    result = cli("capture", "triton", f"{KERNELS / 'layernorm.py'}:run", "--family", "layernorn", "-o", str(out))
    assert result.code == 2 and "--family" in result.err and "layernorm" in result.err
    assert not out.exists()


def test_a_captured_layernorm_gets_the_layernorm_scoped_values(cli, tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    params = ("--param", "rows=1024", "--param", "cols=4096")
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    target = f"{KERNELS / 'layernorm.py'}:run"
    assert cli("capture", "triton", target, *params, "-o", str(plain)).code == 0
    assert cli("capture", "triton", target, *params, "--family", "layernorm", "-o", str(marked)).code == 0
    assert json.loads(marked.read_text())["metadata"]["family"] == "layernorm"

    def latency(*args):
        result = cli("simulate", "--arch", OVERLAY, *args, "--json")
        assert result.code == 0, result.err
        return json.loads(result.out)["latency_s"]

    family = latency("--kernel", "layernorm", *params)
    assert latency(str(marked)) == pytest.approx(family, rel=0.02)  # the same kernel, captured
    assert latency(str(plain)) < 0.9 * latency(str(marked))  # without the scoped values: the chip's own
