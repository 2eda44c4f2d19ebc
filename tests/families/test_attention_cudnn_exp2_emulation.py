"""cuDNN's Blackwell forward computes a share of its exps by a polynomial on the FMA pipes, as
FlashAttention-4's sm100 forward does (``apply_exp2_convert``'s fragment rule and tuning tables):
that share leaves the SFUs and loads the FP32 pipes instead, counting no flops. Not on Hopper, not
where the SFUs are twice as fast (sm_103)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.programs import program_costs
from accelsim.families import attention_impls, get_family
from accelsim.families.attention import EX2_EMULATION_FLOPS
from accelsim.families.attention_impls import cudnn
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
GB200, H100, B300 = load_arch("gb200"), load_arch("h100-sxm"), load_arch("b300")


def problem(head_dim: int = 128, dtype: str = "bf16", causal: bool = False) -> dict:
    return {"head_dim": head_dim, "dtype": dtype, "causal": causal, "decode": False, "backward": False}


def test_the_fragment_rule_picks_what_flash_attention_4_emulates():
    """128 keys a row are four 32-score fragments; from fragment 1 to the one before the last, the
    pairs (k, k+1) with k % freq >= freq - res: freq 10 emulates k = 6, 8, 16, 18, 26, 28 (12 of
    32), so 2 x 12 of 128 scores; freq 16 k = 12, 14, 28, 30 (8 of 32); freq 8 half of each."""
    assert cudnn.exp2_emulated(problem(), 128, GB200) == pytest.approx(24 / 128)
    assert cudnn.exp2_emulated(problem(causal=True), 128, GB200) == pytest.approx(16 / 128)
    assert cudnn.exp2_emulated(problem(dtype="fp8", causal=True), 128, GB200) == pytest.approx(32 / 128)
    assert cudnn.exp2_emulated(problem(head_dim=64), 128, GB200) == pytest.approx(16 / 128)


def test_the_share_follows_the_key_block():
    """64 keys a row are two fragments, the last of which runs on the SFUs: from fragment 1, none."""
    assert cudnn.exp2_emulated(problem(), 64, GB200) == 0.0
    assert cudnn.exp2_emulated(problem(), 256, GB200) == pytest.approx(6 * 12 / 256)


def test_head_dim_256_starts_at_the_first_fragment():
    """FlashAttention-4's hd256 kernel: freq 14, res 6, start 0: three fragments of 12 scores."""
    assert cudnn.exp2_emulated(problem(head_dim=256), 128, GB200) == pytest.approx(36 / 128)


def test_no_emulation_on_hopper_or_with_a_faster_sfu():
    assert cudnn.exp2_emulated(problem(dtype="fp8"), 128, H100) == 0.0
    assert B300.vector.special_function_ops_per_cycle_per_core > 16
    assert cudnn.exp2_emulated(problem(dtype="fp8"), 128, B300) == 0.0


def fp8_costs():
    values = parse_values(FAMILY.params, {"heads": "8", "seq_q": "4096", "seq_kv": "4096", "head_dim": "128",
                                          "dtype": "fp8", "impl": "cudnn"}, "test")
    config = FAMILY.resolve_config(values, {}, GB200)
    return program_costs(FAMILY.build(values, config, GB200), GB200)


def test_the_emulated_share_moves_from_the_sfus_to_the_fp32_pipes(monkeypatch):
    with_emulation = fp8_costs()
    plain_impl = replace(cudnn.IMPL, exp2_emulated=None)
    monkeypatch.setattr(attention_impls, "resolve", lambda name, chip: plain_impl)
    plain = fp8_costs()
    executed_scores = 8 * 4096 * 4096  # 4096 rows and keys are whole 256x128 tiles: no padding
    moved = cudnn.exp2_emulated(problem(dtype="fp8"), 128, GB200) * executed_scores
    sfu_rate = GB200.vector.special_function_ops_per_cycle_per_core * GB200.clock_hz * GB200.vector.efficiency
    fp32_rate = GB200.vector.flops_per_cycle_per_core["fp32"] * GB200.clock_hz * GB200.vector.efficiency
    assert plain.issued_vector_s.sum() - with_emulation.issued_vector_s.sum() == pytest.approx(
        moved / sfu_rate - EX2_EMULATION_FLOPS * moved / fp32_rate, rel=1e-9)
    assert with_emulation.flops.sum() == pytest.approx(plain.flops.sum())  # the polynomial counts no flops
    assert with_emulation.vector_s.sum() < plain.vector_s.sum()  # the SFUs bound this fp8 forward less
