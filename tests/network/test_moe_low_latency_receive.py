"""DeepEP's low-latency kernels receive after the data has arrived (a grid sync ends the
send phase, ``internode_ll.cu``): their time adds one HBM-bound pass over what a rank
receives, dispatch a copy, combine a top-k reduction."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology
from accelsim.network.moe import Routing, low_latency_receive_s, simulate_moe

HBM = 3.0e12
ROUTING = Routing(tokens=128, token_bytes=7392, top_k=8, experts=256)


@pytest.fixture(scope="module")
def node():
    return build_topology(load_arch("dgx-h100"))


@pytest.mark.parametrize("kind, passes", [("dispatch", 2.0), ("combine", 1 + 1 / 8)])
def test_the_receive_phase_reads_every_message_and_writes_the_tokens(kind, passes):
    received = 128 * 8 * 7392  # tokens x top_k messages land on each rank
    assert low_latency_receive_s(ROUTING, kind, HBM) == pytest.approx(passes * received / HBM, rel=1e-12)


@pytest.mark.parametrize("kind", ["dispatch", "combine"])
def test_it_follows_the_transfers_in_the_low_latency_kernels_only(node, kind):
    def time(mode: str, hbm: float | None) -> float:
        return simulate_moe(node, mode, routing=ROUTING, device_sms=132, kind=kind, hbm_bytes_per_s=hbm).latency_s

    assert time("deepep-ll", HBM) == pytest.approx(time("deepep-ll", None) + low_latency_receive_s(ROUTING, kind, HBM),
                                                   rel=1e-12)
    assert time("deepep", HBM) == time("deepep", None)  # the normal kernels receive as chunks arrive


def test_an_unknown_kind_is_refused_naming_it():
    with pytest.raises(InputError) as caught:
        low_latency_receive_s(ROUTING, "reduce", HBM)
    assert caught.value.field == "kind" and "dispatch, combine" in caught.value.message
