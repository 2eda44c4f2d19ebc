"""``flash_decoding`` on Hopper runs TileOPs' kernels, whose MMAs are warpgroup MMAs (wgmma):
its decode steps are priced at the pipe's efficiency, with the softmax on the same chain;
elsewhere they stay chained, and so does FlashAttention's own split-KV kernel (``fa2`` at a decode
shape: FlashAttention-2 code, ``mma.sync``) on Hopper too."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import program_costs
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
DECODE = {"batch": 1, "heads": 32, "kv_heads": 4, "seq_q": 1, "seq_kv": 16384, "head_dim": 128,
          "dtype": "fp16", "impl": "flash_decoding"}
CONFIG = {"block_m": 64, "block_n": 64, "num_stages": 2, "num_warps": 4, "split_kv": 32}
"""TileOPs' batch-one launch of this decode (validation/reference/h200-sxm/attention.json)."""


def build(chip, impl="flash_decoding"):
    values = parse_values(FAMILY.params, {k: str(v) for k, v in {**DECODE, "impl": impl}.items()}, "test")
    return FAMILY.build(values, CONFIG, chip)


def mma_steps(trace):
    return [s for t in trace.templates for s in t.steps if any(c.unit == "matrix" for c in s.compute)]


def test_on_hopper_the_decodes_mmas_are_not_chained():
    steps = mma_steps(build(load_arch("h100-sxm")))
    assert steps and all(s.chained is False for s in steps)


def test_elsewhere_they_are_chained():
    steps = mma_steps(build(load_arch("a100-sxm4-80gb")))
    assert steps and all(s.chained is None for s in steps)


def test_flashattentions_split_kv_kernel_stays_chained_on_hopper():
    steps = mma_steps(build(load_arch("h100-sxm"), impl="fa2"))
    assert steps and all(s.chained is None for s in steps)


def test_on_hopper_they_take_the_pipes_efficiency_not_the_chained_one():
    h100 = load_arch("h100-sxm")
    trace = build(h100)
    matrix_s = program_costs(trace, h100).matrix_s
    other_chain = load_arch("h100-sxm", ["matrix_unit.chained_efficiency=0.2"])
    slower_pipe = load_arch("h100-sxm", ["matrix_unit.efficiency=0.4"])
    assert program_costs(trace, other_chain).matrix_s == pytest.approx(matrix_s)
    assert program_costs(trace, slower_pipe).matrix_s == pytest.approx(matrix_s * 2)
