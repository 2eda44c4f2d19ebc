"""cuDNN's Blackwell forward runs two 128-row query tiles per CTA, one softmax warpgroup each
(FlashAttention-4's ``q_stage = 2``), against one K/V stream; on Hopper a CTA keeps one 128-row
tile over two 64-row wgmma warpgroups. So a short query chunk on Blackwell makes half the programs,
each twice as long."""

from __future__ import annotations

from accelsim.arch.model import load_arch
from accelsim.engine.program_times import instruction_streams
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
PREFILL = {"heads": "32", "kv_heads": "4", "seq_q": "512", "seq_kv": "8192", "head_dim": "128",
           "causal": "true", "impl": "cudnn"}


def trace(arch: str):
    chip = load_arch(arch)
    values = parse_values(FAMILY.params, PREFILL, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return FAMILY.build(values, config, chip), config, chip


def test_blackwell_ctas_take_two_query_tiles_one_consumer_each():
    built, config, chip = trace("b200")
    assert config["block_m"] == 256 and config["num_warps"] == 12  # a producer and two softmax warpgroups
    assert built.num_programs == 32 * 512 // 256
    assert instruction_streams(built, chip) == 2  # each softmax warpgroup a chain of its own


def test_hopper_ctas_keep_one_128_row_tile():
    built, config, chip = trace("h100-sxm")
    assert config["block_m"] == 128 and config["num_warps"] == 12
    assert built.num_programs == 32 * 512 // 128
    assert instruction_streams(built, chip) == 1  # the two wgmma warpgroups take turns
