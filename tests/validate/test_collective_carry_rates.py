"""A fitted per-channel rate (``collectives.channel_bandwidth``: one thread block's bytes per
second) carries to another node in GPU cycles, as the latencies do but inverted: an A100
node (1.41 GHz) gets DGX H100's (1.98 GHz) x 1.41 / 1.98."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.units import parse_quantity

def _tuning(name):
    return load_arch(name, ["collectives.channel_bandwidth=36.6 GB/s"]).collectives


def test_a_channel_rate_carries_in_cycles(report_collectives):
    carried = report_collectives._in_cycles({}, _tuning("dgx-h100"), _tuning("dgx-a100"))
    leaf = carried["channel_bandwidth"]
    assert parse_quantity(leaf["value"], "bytes_per_s") == pytest.approx(36.6e9 * 1.41 / 1.98, rel=1e-3)
    assert "in GPU cycles" in leaf["source"]


def test_a_node_without_the_figure_gets_none(report_collectives):
    carried = report_collectives._in_cycles({}, _tuning("dgx-h100"), load_arch("dgx-a100").collectives)
    assert "channel_bandwidth" not in carried
