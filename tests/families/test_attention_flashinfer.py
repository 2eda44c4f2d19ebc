"""FlashInfer's single-request decode (``impl=flashinfer``): its own launch, not a searched one.
The KV chunks come from the kernel's occupancy (a short cache runs on few programs, a long one
fills one wave), every key is read once however the chunks cut the 128-key tiles, the merge
kernel reads back what the split wrote, and a cache that fits one chunk is not merged."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.occupancy import gpu_occupancies
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.attention_impls.flashinfer import MIN_CHUNK_KEYS
from accelsim.families.base import parse_values
from accelsim.trace.kernel import check_blocks
from tests.families.test_attention_impls import build
from tests.trace_totals import tensor_bytes

H200 = load_arch("h200-sxm")
QWEN = {"batch": 1, "heads": 32, "kv_heads": 4, "seq_q": 1, "head_dim": 128, "dtype": "fp16", "impl": "flashinfer"}


def test_a_short_cache_runs_on_few_programs_of_256_keys():
    """1K keys over 4 KV heads: 4 chunks of the 256-key minimum, 16 programs on 132 SMs."""
    trace, config = build(H200, **QWEN, seq_kv=1024)
    assert (config["block_m"], config["block_n"], config["split_kv"]) == (16, 128, 1024 // MIN_CHUNK_KEYS)
    assert trace.kernel.kernel_starts == [16]


def test_a_long_cache_fills_every_slot_of_one_wave():
    trace, config = build(H200, **QWEN, seq_kv=32768)
    per_sm = gpu_occupancies(trace, H200)[0][0]
    assert config["split_kv"] == per_sm * H200.num_cores // 4
    assert trace.kernel.kernel_starts == [config["split_kv"] * 4]


@pytest.mark.parametrize("seq_kv", [1000, 32768, 100_000])
def test_every_key_is_read_once_and_the_merge_reads_what_the_split_wrote(seq_kv):
    """1000 keys make 4 chunks of 250, 32K 99 of 331, 100K 99 of 1011: none a whole number of
    128-key tiles."""
    trace, config = build(H200, **QWEN, seq_kv=seq_kv)
    totals = tensor_bytes(trace)
    assert totals["K", "read"] == totals["V", "read"] == seq_kv * 4 * 128 * 2
    assert totals["O_partial", "read"] == totals["O_partial", "write"] == config["split_kv"] * 32 * 128 * 2
    assert totals["O_merged", "write"] == 32 * 128 * 2


@pytest.mark.parametrize("shape", [{"seq_kv": 32768}, {"seq_q": 4, "head_dim": 64, "seq_kv": 1000},
                                   {"heads": 8, "kv_heads": 8, "seq_kv": 200}])
def test_its_traces_pass_the_trace_file_checks(shape):
    """Every block a program reaches lies inside its tensor, the merge's strided reads too."""
    check_blocks(build(H200, **{**QWEN, **shape})[0])


def test_a_cache_of_one_chunk_writes_its_output_at_once():
    trace, config = build(H200, **QWEN, seq_kv=256)
    assert config["split_kv"] == 1 and trace.kernel.kernel_starts is None
    totals = tensor_bytes(trace)
    assert totals["O", "write"] == 32 * 128 * 2 and ("O_partial", "write") not in totals


def test_the_kv_tile_halves_where_two_programs_would_not_fit_two_128_key_tiles():
    """Head dim 256: one K and one V 16-key fragment per warp take 64 KiB, so one fits beside Q."""
    _, config = build(H200, **{**QWEN, "head_dim": 256}, seq_kv=4096)
    assert config["block_n"] == 64


def test_it_is_its_library_launch_not_a_search():
    family = get_family("attention")
    values = parse_values(family.params, {k: str(v) for k, v in {**QWEN, "seq_kv": 4096}.items()}, "test")
    assert len(family.config_space(values, H200)) == 1


def test_a_short_cache_is_slower_than_its_bytes_on_few_programs():
    """16 programs cannot pull 2 MB at the chip's bandwidth: latency, not HBM, bounds it."""
    trace, _ = build(H200, **QWEN, seq_kv=1024)
    sim = simulate_kernel(trace, H200)
    assert sim.bound == "latency"
    assert sim.latency_s - sim.launch_overhead_s > 4 * 2 * 1024 * 128 * 2 / H200.hbm.bandwidth_bytes_per_s


def test_batches_run_the_generic_split_decode():
    """8 requests x 4 KV heads, 4K keys: splits of 64-key tiles, then one combine program a head."""
    trace, config = build(H200, **{**QWEN, "batch": 8}, seq_kv=4096)
    assert (config["block_m"], config["block_n"]) == (16, 64) and config["split_kv"] > 1
    assert trace.kernel.kernel_starts == [config["split_kv"] * 8 * 4]
    assert trace.kernel.grid == [config["split_kv"] * 8 * 4 + 8 * 32]


def test_it_runs_on_nvidia_gpus_only_in_dtypes_their_tensor_cores_take():
    with pytest.raises(InputError, match="impl=flashinfer is an NVIDIA GPU kernel"):
        build(load_arch("mi300x"), **QWEN, seq_kv=4096)
    with pytest.raises(InputError, match="no matrix-unit rate for fp8") as refused:
        build(load_arch("a100-sxm4-80gb"), **{**QWEN, "dtype": "fp8"}, seq_kv=4096)
    assert refused.value.field == "params.dtype"
