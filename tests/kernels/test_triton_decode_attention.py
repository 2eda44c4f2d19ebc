"""``kernels/triton/decode_attention.py`` computes one query token's attention over a KV
cache with the sequence split over programs and the partials combined by a second kernel
(one split: the split kernel writes the output), with grouped-query heads and a sequence
that is not a whole number of blocks."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from kernels.triton import decode_attention as decode  # noqa: E402

CASES = {
    "gqa_split": dict(batch=2, heads=8, kv_heads=2, seq_kv=200, head_dim=32, block_n=32, split_kv=4),
    "one_split_mha": dict(batch=1, heads=2, kv_heads=2, seq_kv=48, head_dim=16, block_n=16, split_kv=1),
    "uneven_last_split": dict(batch=1, heads=4, kv_heads=1, seq_kv=100, head_dim=16, block_n=16, split_kv=3),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_matches_float64(case):
    p = CASES[case]
    q, k, v = decode.inputs(p["batch"], p["heads"], p["kv_heads"], p["seq_kv"], p["head_dim"], "fp16")
    o, lse = decode.decode_attention(q, k, v, block_n=p["block_n"], split_kv=p["split_kv"])
    want_o, want_lse = decode.reference(q, k, v)
    assert o.dtype == q.dtype and o.shape == q.shape
    torch.testing.assert_close(o.double(), want_o, atol=2e-2, rtol=0)
    torch.testing.assert_close(lse.double(), want_lse, atol=1e-3, rtol=0)


def test_the_split_is_the_attention_familys():
    from accelsim.families.attention import kv_split

    for seq, split, block in ((262144, 32, 64), (1000, 7, 32), (100, 3, 16), (4096, 64, 128)):
        assert decode.kv_split(seq, split, block) == kv_split(seq, split, block)


@pytest.mark.parametrize("kwargs, match", [
    (dict(split_kv=8, block_n=32), "leaves splits without keys"),
    (dict(split_kv=1, block_n=16, block_m=4), "must hold"),
    (dict(split_kv=1, block_n=16, block_m=24), "power of two"),
    (dict(split_kv=0, block_n=16), "split_kv >= 1"),
    (dict(split_kv=1, block_n=48), "block_n a power of two"),
])
def test_bad_configs_are_refused(kwargs, match):
    q, k, v = decode.inputs(1, 8, 1, 100, 16, "fp16")
    with pytest.raises(ValueError, match=match):
        decode.decode_attention(q, k, v, **kwargs)
