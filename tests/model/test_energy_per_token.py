"""A model step's energy: the replayed step's joules over every device and link, tokens per
joule, and the average power per device, which lies between the chip's idle power and its TDP
(links included, at most a little above TDP)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from accelsim.arch.model import chip_of, load_arch
from accelsim.model.layout import FRAMEWORKS, Layout, Workload
from accelsim.model.step import plan_step, run_step, step_trace

def test_energy_per_token_follows_the_replayed_step(cli, config):
    r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["energy_j"] == out["replay"]["energy_j"] > 0
    assert out["tokens_per_j"] == pytest.approx(out["tokens"] / out["energy_j"])
    per_device = out["average_power_w_per_device"]
    assert per_device * out["devices"] == pytest.approx(out["replay"]["average_power_w"])
    power = chip_of(load_arch("dgx-h100")).power
    assert power.idle_w <= per_device <= 1.05 * power.tdp_w


def test_the_text_output_has_an_energy_row(cli, config):
    r = cli("model", config, "--system", "dgx-h100", "--seq", "512", "--batch", "8", "--tp", "2")
    assert r.code == 0, r.err
    (row,) = [line for line in r.out.splitlines() if line.startswith("energy ")]
    assert "J per step" in row and "W per device" in row and "tokens/J" in row


def test_a_step_without_link_energy_has_no_energy_figures(tiny, node):
    step = plan_step(tiny, Workload(mode="decode", seq_len=512, batch=8), Layout(tp=2), FRAMEWORKS["megatron"], node)
    result, _ = run_step(step, step_trace(step))
    assert result.energy_j is not None
    unknown = replace(result, step=replace(result.step, link_energy_j=None))
    assert unknown.energy_j is None and unknown.tokens_per_j is None
    assert "energy_j" not in unknown.to_json() and "tokens_per_j" not in unknown.row()
