"""Sizes a config or ``--set`` gives are bounded before anything is built: a cluster's
NICs per node (1e6 took over 100 s and 5 GB to build, 1e23 never finished) and its NICs
in all."""

import pytest

from accelsim.arch.loader import OverrideError
from accelsim.arch.model import load_arch
from accelsim.errors import InputError


@pytest.mark.parametrize("nics", ["145", "1000000", "100000000000000000000000"])
def test_nics_per_node_past_the_limit(nics):
    with pytest.raises(InputError) as exc:
        load_arch("h100-ib-cluster", [f"network.nics_per_node={nics}"])
    assert isinstance(exc.value, OverrideError) and exc.value.field == "network.nics_per_node"
    assert exc.value.message == f"must be at most 144 NICs per node, got {int(nics):,}"


def test_the_whole_fabric_is_bounded_by_its_estimate():
    assert load_arch("h100-ib-cluster", ["network.nics_per_node=64", "nodes=16384"]).nics_per_node == 64
    with pytest.raises(InputError) as exc:
        load_arch("h100-ib-cluster", ["network.nics_per_node=64", "nodes=16385"])
    assert "the cluster would have 1,048,640 NICs (16,385 nodes x 64); accelsim models at most 1,048,576" \
        in exc.value.message


@pytest.mark.parametrize("path", ["hbm.efficiency", "shared_cache.efficiency", "matrix_unit.efficiency"])
def test_an_efficiency_that_replaces_the_peak(path):
    """Found by fuzzing: an efficiency of 9e-31 made a copy kernel come out faster than
    HBM's peak allows (its time fell out of the engine's scale unrefused)."""
    with pytest.raises(InputError) as exc:
        load_arch("h100-sxm", [f"{path}=9e-31"])
    assert exc.value.field == path and exc.value.message == "must be a fraction from 0.001 to 1, got 9e-31"
    assert load_arch("h100-sxm", [f"{path}=0.001"])


def test_a_positive_number_too_small_to_multiply():
    """Found by fuzzing: 5e-324 bytes per cycle made a rate of 0, which the engine's flow
    start refused with a ValueError."""
    with pytest.raises(InputError) as exc:
        load_arch("h100-sxm", ["local_memory.bandwidth_bytes_per_cycle=5e-324"])
    assert exc.value.message == "must be at least 1e-30, got 5e-324"
