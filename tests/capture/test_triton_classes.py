"""Capture by equivalence class: a few programs of each class run and the rest are
replicated; the trace equals the full capture (every program, every iteration) on
ragged edges, causal masks, grouped-query attention, split-K (over a GEMM's K and a
decode's keys) in grouped tile order, and kernels whose classes cannot be replicated
(their programs run whole)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from accelsim.capture.triton import capture_triton  # noqa: E402
from accelsim.capture.triton_classes import (  # noqa: E402
    Rule,
    held_out,
    integer_fit,
    program_classes,
    representatives,
    rule_for,
)
from tests.capture.test_triton_capture import KERNELS, capture, without_metadata  # noqa: E402


def assert_replicated_exactly(kernel: str, entry: str = "run", **params):
    path, text = str(KERNELS / f"{kernel}.py"), {k: str(v) for k, v in params.items()}
    sampled = capture_triton(path, entry, text)
    full = capture_triton(path, entry, text, exact=True)
    assert without_metadata(sampled) == without_metadata(full)
    sampling = sampled.metadata["sampling"]
    assert sampling["replicated"] > 0
    return sampling


def test_ragged_grouped_matmul_replicates_exactly():
    """9 x 6 tiles in groups of 4 rows (the last group ragged), ragged M, N and K."""
    assert_replicated_exactly("matmul", M=520, N=330, K=96, dtype="fp16", block_m=64, block_n=64, block_k=32,
                              group_m=4, num_warps=4, num_stages=2)


def test_causal_attention_with_a_ragged_last_query_block_replicates_exactly():
    """Loop trips grow with the query block (a loop of no trips in the first), the last
    query block is partly masked, batch x heads is split into two axes by the kernel."""
    assert_replicated_exactly("attention", batch=2, heads=4, seq_q=300, head_dim=16, causal=True, block_m=32,
                              block_n=32, dtype="fp16")


def test_grouped_query_attention_with_longer_keys_replicates_exactly():
    """Four query heads per KV head (the KV head a feature of its own), keys longer than
    queries (bottom-right causal alignment)."""
    assert_replicated_exactly("attention", batch=1, heads=8, kv_heads=2, seq_q=512, seq_kv=640, head_dim=16,
                              causal=True, block_m=64, block_n=64, dtype="fp16")


def test_uneven_causal_programs_in_one_class_run_whole_and_stay_exact():
    """Query blocks of half a key block: odd and even query blocks mask their last key
    block differently (different steps in one class), so those classes run every program."""
    sampled = capture("attention", batch=1, heads=4, kv_heads=1, seq_q=256, seq_kv=384, head_dim=16, causal=True,
                      block_m=32, block_n=64, dtype="fp16")
    full = capture("attention", exact=True, batch=1, heads=4, kv_heads=1, seq_q=256, seq_kv=384, head_dim=16,
                   causal=True, block_m=32, block_n=64, dtype="fp16")
    assert without_metadata(sampled) == without_metadata(full)


def test_split_kv_decode_with_a_ragged_last_split_replicates_exactly():
    """Split-K over the keys: each split's first block and trip count follow its index, the
    last split is short and ends in a masked block; a query block holds 4 KV groups' heads
    (its block coordinate is ``kv_head // 4``)."""
    assert_replicated_exactly("decode_attention", "run_split", batch=2, heads=32, kv_heads=8, seq_kv=1000, head_dim=16,
                              block_n=32, split_kv=6, dtype="fp16")


SCRAMBLED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scrambled(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for _ in tl.range(0, 2):  # the probe stops at a loop: what follows is no feature
        pass
    block = (pid * pid) % 11
    offs = block * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def run(programs=40, block=16):
    x = torch.randn(11 * block)
    y = torch.empty(programs * block)
    scrambled[(programs,)](x, y, BLOCK=block)
    return y
'''


SPLIT_K = '''
import torch
import triton
import triton.language as tl


@triton.jit
def split_k_matmul(a_ptr, b_ptr, c_ptr, M, N, K, k_per_split,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * grid_n
    first_m = (pid // in_group) * GROUP_M
    group_size = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_size
    pid_n = (pid % in_group) // group_size
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_start = split * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in tl.range(k_start, k_end, BLOCK_K):
        offs_k = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :],
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_end), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * N + offs_n[None, :],
                    mask=(offs_k[:, None] < k_end) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.atomic_add(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
                  mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def run(M=300, N=200, K=330, splits=3, block=32, block_k=32, group_m=4):
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.zeros(M, N, dtype=torch.float32)
    k_per_split = triton.cdiv(triton.cdiv(K, splits), block_k) * block_k
    grid = (triton.cdiv(M, block) * triton.cdiv(N, block), splits)
    split_k_matmul[grid](a, b, c, M, N, K, k_per_split, BLOCK_M=block, BLOCK_N=block, BLOCK_K=block_k,
                         GROUP_M=group_m)
    return c
'''


def test_grouped_split_k_matmul_with_ragged_edges_replicates_exactly(tmp_path):
    """Split-K in grouped tile order: 10 x 7 tiles (ragged M, N, a ragged last group), K cut
    in three splits of 4, 4 and 3 blocks (the last one masked), C accumulated with atomics."""
    path = tmp_path / "split_k.py"
    path.write_text(SPLIT_K)
    sampled = capture_triton(str(path), "run", {})
    full = capture_triton(str(path), "run", {}, exact=True)
    assert without_metadata(sampled) == without_metadata(full)
    assert sampled.metadata["sampling"]["replicated"] > 0


def test_blocks_no_prologue_integer_explains_run_every_program(tmp_path):
    """The block read is (pid^2 mod 11) for program pid, computed after a loop (where the
    feature probe stops): affine in no feature over a class, so the classes run whole."""
    path = tmp_path / "scrambled.py"
    path.write_text(textwrap.dedent(SCRAMBLED))
    sampled = capture_triton(str(path), "run", {})
    full = capture_triton(str(path), "run", {}, exact=True)
    assert without_metadata(sampled) == without_metadata(full)
    assert sampled.metadata["sampling"]["replicated"] == 0


def test_classes_are_where_each_feature_sits_in_its_range():
    features = np.array([[0, 1, 2, 3, 0, 1, 2, 3],
                         [0, 0, 0, 0, 1, 1, 1, 1]])
    classes = program_classes(features)
    # column 0 and 3 are the first and last of each row; 1 and 2 the interior
    assert classes[1] == classes[2] and classes[5] == classes[6]
    assert len(set(classes.tolist())) == 6


def test_representatives_span_the_class():
    assert representatives(np.arange(3)).tolist() == [0, 1, 2]
    chosen = representatives(np.arange(10, 110))
    assert chosen[0] == 10 and chosen[-1] == 109 and len(chosen) == 5


def test_the_held_out_program_is_one_the_representatives_leave_out():
    assert held_out(np.arange(5)).tolist() == []
    members = np.arange(10, 110)
    check = held_out(members)
    assert len(check) == 1 and check[0] not in representatives(members)


def test_an_integer_is_fitted_to_the_first_feature_that_explains_it():
    features = np.array([[5, 5, 5], [0, 1, 3], [1, 2, 4]])
    assert rule_for(np.array([4, 6, 10]), features, features) == Rule(1, 2, 4)
    assert rule_for(np.array([4, 6, 11]), features, features) is None


def test_a_floor_division_fits_where_no_line_does():
    kv_head = np.array([[1, 2, 4, 5, 6]])
    assert rule_for(np.array([0, 0, 1, 1, 1]), kv_head, kv_head) == Rule(0, 1, 0, divisor=4)


def test_features_that_fit_the_representatives_but_differ_in_the_class_fit_nothing():
    at_representatives = np.array([[0, 1, 2], [0, 1, 2]])
    over_class = np.array([[0, 1, 2, 3], [0, 1, 2, 7]])
    assert rule_for(np.array([0, 1, 2]), at_representatives, over_class) is None
    assert rule_for(np.array([0, 1, 2]), at_representatives, at_representatives) == Rule(0, 1, 0)


def test_a_constant_is_not_trusted_where_a_feature_varies_only_between_representatives():
    at_representatives = np.array([[0, 1, 2], [4, 4, 4]])
    over_class = np.array([[0, 1, 2, 3], [4, 4, 4, 5]])
    samples = np.array([[0, 9], [1, 9], [2, 9]])
    assert integer_fit(samples, at_representatives, over_class) is None
    assert integer_fit(samples, at_representatives, at_representatives) == [Rule(0, 1, 0), 9]
