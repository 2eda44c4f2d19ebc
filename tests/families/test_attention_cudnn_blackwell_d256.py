"""cuDNN's Blackwell forward at head dim 256: two query tiles' S and O accumulators would not fit
tensor memory's 512 columns (2 x (128 + 256)), so a CTA runs one 128-row tile against 128-key
blocks, two S stages of its own (two streams), and pairs with its neighbour in one 2-SM MMA, each
CTA loading and staging half of every K and V block (FlashAttention-4's hd256 kernel)."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.program_times import instruction_streams
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.base import parse_values

FAMILY = get_family("attention")
PREFILL = {"heads": "8", "kv_heads": "2", "seq_q": "1024", "head_dim": "256", "causal": "true",
           "impl": "cudnn"}


def built(arch: str, **changes):
    chip = load_arch(arch)
    values = parse_values(FAMILY.params, {**PREFILL, **changes}, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return FAMILY.build(values, config, chip), config, chip


def kv_reads(trace):
    loop = next(s for s in trace.templates[0].steps if s.repeat == "n_unmasked")
    return [t for t in loop.transfers if t.tensor in ("K", "V")], [c for c in loop.compute if c.unit == "matrix"]


def test_one_query_tile_a_cta_paired_over_two_sms():
    trace, config, chip = built("b200")
    assert (config["block_m"], config["block_n"], config["pair"]) == (128, 128, 2)
    assert instruction_streams(trace, chip) == 2  # two S stages: MMAs and softmax overlap
    reads, mmas = kv_reads(trace)
    assert all(t.bytes == 128 * 256 * 2 // 2 and t.block[-1] == "kv_part" for t in reads)
    assert all(c.pair == 2 for c in mmas)
    assert trace.kernel.resources.local_memory_bytes <= chip.local.max_per_program_bytes


def test_head_dim_128_keeps_two_tiles_unpaired():
    _, config, _ = built("b200", head_dim="128")
    assert config["block_m"] == 256 and "pair" not in config


def test_the_pair_spans_one_mma_only_where_the_chip_can():
    chip = load_arch("h100-sxm")
    values = parse_values(FAMILY.params, {**PREFILL, "impl": "fa3"}, "test")
    with pytest.raises(InputError, match="matrix_unit.pair"):
        FAMILY.resolve_config(values, {"pair": 2}, chip)
