"""An fp8 backward on Hopper transposes in shared memory what an 8-bit wgmma must read K-major:
Q's and dO's blocks every iteration (dK = dS^T Q, dV = P^T dO reduce over query rows) and the
program's K block once (dQ = dS K reduces over keys); bf16 transposes nothing."""

from __future__ import annotations

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
BACKWARD = {"heads": "4", "seq_q": "1024", "head_dim": "128", "impl": "cudnn", "pass": "bwd-kernel"}


def local_moves(dtype: str):
    chip = load_arch("h100-sxm")
    values = parse_values(FAMILY.params, {**BACKWARD, "dtype": dtype}, "test")
    trace = FAMILY.build(values, FAMILY.resolve_config(values, {}, chip), chip)
    steps = trace.templates[0].steps
    loop = next(s for s in steps if s.repeat == "n_full")
    once = [t for t in steps[0].transfers if t.level == "local"]
    return once, [t for t in loop.transfers if t.level == "local" and t.tensor.endswith("t")]


def test_fp8_transposes_q_and_do_each_iteration_and_k_once():
    once, each = local_moves("fp8")
    assert sorted((t.tensor, t.direction, t.bytes) for t in each) == [
        ("sQt", "read", 64 * 128), ("sQt", "write", 64 * 128), ("sdOt", "read", 64 * 128), ("sdOt", "write", 64 * 128)]
    assert sorted((t.tensor, t.direction) for t in once) == [("sKt", "read"), ("sKt", "write")]


def test_bf16_transposes_nothing():
    once, each = local_moves("bf16")
    assert once == [] and each == []
