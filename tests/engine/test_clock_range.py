"""The simulated clock counts integer picoseconds (int64 with room to add: about 53 days).
An input whose time falls outside it (1e20 flops on one core, a duration of 1e300 s) is
bad input, one line and exit 2, never a numpy overflow or a negative delay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelsim.engine.chip import PLAIN, Shortcuts, simulate_kernel
from accelsim.errors import InputError
from accelsim.units import MAX_SIMULATED_PS, PS_PER_S, seconds_to_ps

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("seconds", [1e300, float("inf"), float("nan"), -1.0, MAX_SIMULATED_PS / PS_PER_S * 1.01])
def test_a_time_outside_the_clock_is_refused(seconds):
    with pytest.raises(InputError, match="outside the simulator's clock"):
        seconds_to_ps(seconds)


def test_the_clock_holds_weeks():
    assert seconds_to_ps(30 * 86400) == 30 * 86400 * PS_PER_S


def test_a_kernel_past_the_clock_is_refused(ideal_chip, kernel_trace):
    steps = [{"compute": [{"unit": "vector", "flops": 1e30, "dtype": "fp32"}]}]
    with pytest.raises(InputError, match="outside the simulator's clock"):
        simulate_kernel(kernel_trace([4], steps), ideal_chip("h100-sxm"))


def test_cli_one_line_for_a_trace_and_a_system_trace(cli, tmp_path):
    trace = json.loads((ROOT / "traces" / "triton" / "matmul_512.json").read_text())
    compute = trace["templates"][0]["steps"][0]["compute"][0]
    compute.update(flops=1e20, shape=None)
    kernel = tmp_path / "k.json"
    kernel.write_text(json.dumps(trace))
    system = tmp_path / "s.json"
    system.write_text(json.dumps({"schema_version": 1, "kind": "system_trace", "name": "t", "num_devices": 8,
                                  "programs": [{"name": "p", "devices": ["0-7"], "ops": [
                                      {"name": "a", "kind": "compute", "duration_s": 1e25}]}]}))
    for path, args in [(kernel, ("simulate", "--arch", "h100", str(kernel))),
                       (system, ("replay", str(system), "--system", "dgx-h100"))]:
        result = cli(*args)
        assert result.code == 2 and result.err.count("\n") == 1, result.err
        assert "outside the simulator's clock" in result.err and str(path) in result.err


def test_a_launch_overhead_past_the_clock_is_refused(cli):
    """The launch overhead is added after the replay; it returned a latency of 1e30 s."""
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", "rmsnorm", "--param", "rows=64", "--param", "cols=64",
                 "--set", "launch_overhead=1e30 s")
    assert result.code == 2 and "outside the simulator's clock" in result.err


@pytest.mark.parametrize("shortcuts", [Shortcuts(), PLAIN], ids=["shortcuts", "plain"])
def test_a_tiny_port_bandwidth_is_refused_not_overflowed(shortcuts):
    """Issue 29: a 16M-element add on an A100 whose SM port moves 6.4e-11 bytes per cycle
    takes months; its flows' ends (and the waves fast-forward would add) pass the clock."""
    from accelsim.arch.model import load_arch
    from accelsim.families import get_family
    from accelsim.families.search import split_params

    chip = load_arch("a100-sxm4-80gb", ["local_memory.fill_bandwidth_bytes_per_cycle=6.4e-11"])
    family = get_family("elementwise")
    values, given, _ = split_params(family, {"elements": "16777216", "dtype": "fp32", "inputs": "2"})
    trace = family.build(values, family.resolve_config(values, given, chip), chip)
    with pytest.raises(InputError, match="outside the simulator's clock"):
        simulate_kernel(trace, chip, shortcuts=shortcuts)


def test_cli_one_line_for_a_tiny_port_bandwidth(cli):
    result = cli("simulate", "--arch", "a100-sxm4-80gb", "--kernel", "elementwise", "--param", "elements=16777216",
                 "--param", "dtype=fp32", "--param", "inputs=2",
                 "--set", "local_memory.fill_bandwidth_bytes_per_cycle=6.4e-11")
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert "outside the simulator's clock" in result.err
