"""``capture --family NAME`` marks a captured kernel as one of the built-in families
(``metadata.family``): a calibrated chip's values scoped to that family then apply to
the trace as they do to the family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "triton"
SCOPED = """\
extends: a100-sxm4-80gb
name: a100-norm-scoped
family_values:
  layernorm:
    hbm.efficiency: {value: 0.774, basis: fitted, source: test}
    launch_overhead: {value: 7.9 us, basis: fitted, source: test}
"""
"""An HBM efficiency and launch overhead scoped to the layernorm family."""


@pytest.fixture
def overlay(tmp_path) -> str:
    path = tmp_path / "a100-norm-scoped.yaml"
    path.write_text(SCOPED)
    return str(path)


def test_an_unknown_family_is_refused_before_capturing(cli, tmp_path):
    out = tmp_path / "t.json"
    result = cli("capture", "triton", f"{KERNELS / 'layernorm.py'}:run", "--family", "layernorn", "-o", str(out))
    assert result.code == 2 and "--family" in result.err and "layernorm" in result.err
    assert not out.exists()


def test_a_captured_layernorm_gets_the_layernorm_scoped_values(cli, tmp_path, overlay):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    params = ("--param", "rows=1024", "--param", "cols=4096")
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    target = f"{KERNELS / 'layernorm.py'}:run"
    assert cli("capture", "triton", target, *params, "-o", str(plain)).code == 0
    assert cli("capture", "triton", target, *params, "--family", "layernorm", "-o", str(marked)).code == 0
    assert json.loads(marked.read_text())["metadata"]["family"] == "layernorm"

    def latency(*args):
        result = cli("simulate", "--arch", overlay, *args, "--json")
        assert result.code == 0, result.err
        return json.loads(result.out)["latency_s"]

    family = latency("--kernel", "layernorm", *params)
    assert latency(str(marked)) == pytest.approx(family, rel=0.02)  # the same kernel, captured
    assert latency(str(plain)) < 0.9 * latency(str(marked))  # without the scoped values: the chip's own


def test_explore_family_gives_a_captured_kernel_its_scoped_values(cli, tmp_path, overlay):
    """explore captures each candidate: ``--family`` marks them as ``capture --family`` does."""
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    space = tmp_path / "space.yaml"
    space.write_text("configs:\n  - {block_rows: 1}\n")
    args = ("explore", "--arch", overlay, "--kernel", f"{KERNELS / 'layernorm.py'}:run", "--param", "rows=1024",
            "--param", "cols=4096", "--space", str(space), "--json")

    def best(*extra):
        result = cli(*args, *extra)
        assert result.code == 0, result.err
        return json.loads(result.out)["ranking"][0]["latency_s"]

    assert best() < 0.9 * best("--family", "layernorm")
    refused = cli("explore", "--arch", overlay, "--kernel", "gemm", "--param", "M=64", "--param", "N=64",
                  "--param", "K=64", "--family", "gemm")
    assert refused.code == 2 and "--family" in refused.err
