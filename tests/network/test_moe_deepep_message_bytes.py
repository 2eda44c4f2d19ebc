"""DeepEP's normal kernels move each token with its routing beside it: within a node its
source index, top-k indices (8 B) and weights; across nodes one 16-byte-aligned message
with an 8-byte SourceMeta, top-k indices (4 B) and weights."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology
from accelsim.network.moe import Routing, deepep_message_bytes, simulate_moe

FP8_TOKEN = 7168 + 7168 // 128 * 4  # values and scales: what DeepEP's tests count
BF16_TOKEN = 7168 * 2


def test_an_intranode_dispatch_carries_the_source_the_experts_and_their_weights():
    assert deepep_message_bytes(FP8_TOKEN, 8, "dispatch", across_nodes=False) == FP8_TOKEN + 4 + 8 * 8 + 4 * 8
    assert deepep_message_bytes(BF16_TOKEN, 8, "combine", across_nodes=False) == BF16_TOKEN + 4 + 4 * 8


def test_an_internode_message_is_padded_to_16_bytes():
    assert deepep_message_bytes(FP8_TOKEN, 8, "dispatch", across_nodes=True) == 7472  # 7392 + 8 + 32 + 32
    assert deepep_message_bytes(BF16_TOKEN, 8, "combine", across_nodes=True) == 14384  # 14336 + 8 + 32, padded
    assert deepep_message_bytes(1, 1, "combine", across_nodes=True) == 16


def test_the_metadata_is_on_the_wire_but_not_in_the_token():
    topo = build_topology(load_arch("h100-ib-cluster", ["nodes=1"]))
    small = Routing(tokens=256, token_bytes=FP8_TOKEN, top_k=8, experts=256)
    r = simulate_moe(topo, "deepep", routing=small, sm_budget=24)
    nccl = simulate_moe(topo, "nccl", routing=small, sm_budget=24)  # NCCL moves the token alone
    assert r.nvlink_bytes_per_rank / nccl.nvlink_bytes_per_rank == pytest.approx((FP8_TOKEN + 100) / FP8_TOKEN)


def test_an_unknown_kind_is_refused():
    with pytest.raises(InputError, match="kind"):
        deepep_message_bytes(FP8_TOKEN, 8, "gather", across_nodes=False)
