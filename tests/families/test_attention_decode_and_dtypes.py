"""Attention edge cases an audit found: flash-decoding splits cut at whole KV blocks (a
block shared by two splits counted as an L2 hit), the combine kernel writes O, causal
masks on short query blocks apply, recomputed matmuls count no flops, and fp8 attention
moves its bf16 outputs and gradients at 2 bytes."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.attention import useful_flops
from accelsim.families.base import parse_values
from tests.trace_totals import tensor_bytes

H100, V5E = load_arch("h100-sxm"), load_arch("tpu-v5e")
FAMILY = get_family("attention")


def build(chip, **params):
    values = parse_values(FAMILY.params, {k: str(v) for k, v in params.items()}, "test")
    config = FAMILY.resolve_config(values, {}, chip)
    return FAMILY.build(values, config, chip), values


def test_decode_splits_cut_at_whole_blocks_and_write_the_output():
    """seq_kv=1000 in 4 splits of 64-key blocks: HBM bytes fell below K and V alone, and the
    combined O and LSE were never written."""
    trace, _ = build(H100, heads=32, seq_q=1, seq_kv=1000, head_dim=64)
    assert trace.metadata["config"]["split_kv"] > 1
    sim = simulate_kernel(trace, H100)
    k_and_v = 2 * 32 * 1000 * 64 * 2
    assert sim.hbm_bytes >= k_and_v + 32 * 64 * 2
    totals = tensor_bytes(trace)
    assert totals["O", "write"] == 32 * 64 * 2 and totals["LSE", "write"] == 32 * 4
    assert totals["K", "read"] == totals["V", "read"] == k_and_v // 2


def test_split_decode_combines_in_a_second_kernel():
    """The combine was a final step of the last split's program, which started as soon as
    its own split ended (not after every split) and read its partials one split at a time."""
    trace, values = build(H100, batch=2, heads=32, kv_heads=4, seq_q=1, seq_kv=8192, head_dim=128)
    split = trace.metadata["config"]["split_kv"]
    splits = split * 2 * 4
    assert split > 1 and trace.kernel.kernel_starts == [splits]
    assert trace.num_programs == splits + 2 * 32  # one combine program per (batch, query head)
    totals = tensor_bytes(trace)
    partials = splits * 8 * (128 + 1) * 4  # each split's 8 query rows and LSE in fp32
    assert totals["O_partial", "write"] == totals["O_partial", "read"] == partials
    combine = trace.templates[-1]
    assert combine.name == "combine" and len(combine.steps[0].transfers) == split  # loaded at once
    sim = simulate_kernel(trace, H100)
    assert sim.launch_overhead_s == 2 * H100.launch_overhead_s


def test_a_split_without_keys_is_refused():
    with pytest.raises(InputError, match="split_kv=200 leaves some splits without keys"):
        values = parse_values(FAMILY.params, {"heads": "8", "seq_q": "1", "seq_kv": "100"}, "test")
        FAMILY.resolve_config(values, {"split_kv": 200}, H100)


@pytest.mark.parametrize("chip", [H100, V5E], ids=["gpu", "tpu"])
def test_short_causal_queries_are_masked(chip):
    """seq_q=16 causal took the decode path: refused on GPUs, unmasked on TPUs (1.88x the flops)."""
    trace, values = build(chip, heads=8, seq_q=16, causal="true", head_dim=128)
    assert program_costs(trace, chip).matrix_flops.sum() == pytest.approx(useful_flops(values))


def test_recomputed_matmuls_cost_time_but_count_no_flops():
    """The TPU backward's dq kernel recomputes S and dP (useful: false); they were counted."""
    trace, values = build(V5E, heads=16, seq_q=2048, **{"pass": "bwd"})
    costs = program_costs(trace, V5E)
    assert costs.matrix_flops.sum() == pytest.approx(useful_flops(values))


def test_fp8_attention_moves_bf16_outputs_and_gradients_at_2_bytes():
    trace, _ = build(H100, heads=16, seq_q=1024, head_dim=64, dtype="fp8", impl="triton", **{"pass": "bwd"})
    assert {trace.tensors[t].dtype for t in ("O", "dO", "dK", "dV", "dQ_out")} == {"bf16"}
    totals = tensor_bytes(trace)
    assert totals["dK", "write"] == totals["dV", "write"] == 16 * 1024 * 64 * 2
    main_do = totals["dO", "read"] - 16 * 1024 * 64 * 2  # the Delta kernel reads dO once
    assert main_do % 2 == 0 and main_do == 16 * 16 * 1024 * 64 * 2  # every kv block's pass, at 2 B


def test_the_combine_programs_count_against_the_program_limit(monkeypatch):
    """64 split programs under a limit of 64, plus 32 combine programs: a traceback (the
    trace's own check) instead of the one-line refusal."""
    import accelsim.families.attention as attention
    import accelsim.trace.kernel as kernel

    monkeypatch.setattr(kernel, "MAX_PROGRAMS", 64)
    values = parse_values(FAMILY.params, {"heads": "32", "kv_heads": "4", "seq_q": "1", "seq_kv": "16384"}, "test")
    config = FAMILY.resolve_config(values, {"split_kv": "16", "block_n": "64"}, H100)
    with pytest.raises(InputError, match="the kernel would have 96 programs"):
        attention.build(values, config, H100)


def test_the_combine_reads_the_blocks_the_splits_wrote():
    trace, _ = build(H100, batch=2, heads=32, kv_heads=4, seq_q=1, seq_kv=8192, head_dim=128)
    split = trace.metadata["config"]["split_kv"]
    variables = trace.program_vars
    written, read = set(), set()
    for program, template in enumerate(trace.program_template):
        for step in trace.templates[template].steps:
            for transfer in step.transfers:
                if transfer.tensor != "O_partial":
                    continue
                block = tuple(variables[i][program] if isinstance(i, str) and i in variables else i
                              for i in transfer.block)
                if transfer.direction == "write":
                    written.add(block)
                else:
                    read.add(block)
    assert len(written) == split * 2 * 4
    assert {block[:3] for block in read} == written  # each head's rows of every split's partial
    assert len(read) == len(written) * 8  # 8 query heads per KV head


def test_a_split_whose_combine_does_not_fit_names_split_kv():
    """The combine kernel holds every split's log-sum-exp of its rows: a split count whose
    combine program needs more shared memory than an SM gives is refused as split_kv, the
    parameter the user gave, not as a field of the trace."""
    values = parse_values(FAMILY.params, {"batch": "1", "heads": "8", "kv_heads": "8", "seq_q": "16",
                                          "seq_kv": "262144", "head_dim": "128"}, "test")
    config = {"block_m": "16", "block_n": "64", "num_stages": "2", "num_warps": "4"}
    with pytest.raises(InputError) as info:
        FAMILY.resolve_config(values, {**config, "split_kv": "4096"}, H100)
    assert info.value.field == "params.split_kv" and "combine kernel" in info.value.message
    FAMILY.resolve_config(values, {**config, "split_kv": "2048"}, H100)  # 139 KB: fits


def test_tpu_decode_search_offers_a_block_of_just_the_query_heads():
    """A TPU decode block holds a KV group's query heads as rows: the search offers a block
    of just those (a whole sublane group) besides 128 and 256 rows, whose padding rows run
    the softmax too, and picks it for a batched GQA decode."""
    from accelsim.families.attention import config_space
    from accelsim.families.search import best_config

    v6e = load_arch("tpu-v6e")
    values = parse_values(FAMILY.params, {"batch": "64", "heads": "32", "kv_heads": "8", "seq_q": "1",
                                          "seq_kv": "4096", "head_dim": "128"}, "test")
    assert sorted({c["block_m"] for c in config_space(values, v6e)}) == [8, 128, 256]
    assert best_config(FAMILY, values, v6e).best.config["block_m"] == 8
