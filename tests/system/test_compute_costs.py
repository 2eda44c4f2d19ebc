"""Compute ops cost what their source says, each distinct kernel is simulated once, and
a step is never shorter than its analytic bound."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.errors import InputError
from accelsim.system.costs import CostModel
from accelsim.system.replay import ReplayOptions, replay
from accelsim.trace.kernel import load_trace
from tests.system.conftest import compute, spmd

REPO = Path(__file__).resolve().parents[2]
KERNEL = REPO / "traces" / "triton" / "matmul_512.json"


def test_roofline_is_the_slower_of_flops_and_bytes():
    # at one fixed clock: with the boost on a teraflop at the TDP is throttled below the roofline's clock
    dgx = load_arch("dgx-h100-published", ["chip.power.dvfs.boost.enabled=false"])
    chip = dgx.chip
    peak = chip.matrix_flops_per_s("bf16") * chip.matrix.efficiency
    hbm = chip.hbm.bandwidth_bytes_per_s * chip.hbm.efficiency
    flop_bound = replay(spmd([{"name": "a", "kind": "compute", "flops": 1e12, "bytes": 1e6}]), dgx).step_time_s
    byte_bound = replay(spmd([{"name": "a", "kind": "compute", "flops": 1e6, "bytes": 1e10}]), dgx).step_time_s
    assert flop_bound == pytest.approx(1e12 / peak, rel=1e-9)
    assert byte_bound == pytest.approx(1e10 / hbm, rel=1e-9)


def test_kernel_trace_relative_to_the_system_trace(dgx, tmp_path):
    shutil.copy(KERNEL, tmp_path / "k.json")
    ops = [{"name": f"k{i}", "kind": "compute", "kernel_trace": "k.json"} for i in range(5)]
    r = replay(spmd(ops), dgx, base_dir=tmp_path)
    alone = simulate_kernel(load_trace(KERNEL), dgx.chip).latency_s
    assert r.kernels_simulated == 1
    assert r.step_time_s == pytest.approx(5 * alone, rel=1e-9)


def test_family_op_is_simulated_once_per_distinct_params(dgx):
    gemm = lambda name, m: {"name": name, "kind": "compute", "family": "gemm", "params": {"M": m, "N": 1024, "K": 1024}}  # noqa: E731
    r = replay(spmd([gemm("a", 1024), gemm("b", 1024), gemm("c", 2048)]), dgx)
    assert r.kernels_simulated == 2


def test_replays_can_share_kernel_costs(dgx):
    gemm = lambda name, m: {"name": name, "kind": "compute", "family": "gemm", "params": {"M": m, "N": 1024, "K": 1024}}  # noqa: E731
    costs = CostModel(dgx.chip, Path("."))
    first = replay(spmd([gemm("a", 1024), gemm("b", 2048)]), dgx, costs=costs)
    second = replay(spmd([gemm("a", 2048), gemm("b", 4096)]), dgx, costs=costs)
    assert (first.kernels_simulated, second.kernels_simulated) == (2, 1)
    assert second.step_time_s == replay(spmd([gemm("a", 2048), gemm("b", 4096)]), dgx).step_time_s
    with pytest.raises(ValueError, match="chip"):
        replay(spmd([gemm("a", 1024)]), load_arch("dgx-a100"), costs=costs)


def test_bad_family_params_name_the_op(dgx):
    ops = [{"name": "a", "kind": "compute", "family": "gemm", "params": {"M": 1024, "N": 1024, "Q": 3}}]
    with pytest.raises(InputError) as info:
        replay(spmd(ops), dgx)
    assert info.value.field.startswith("programs[0].ops[0].params")


def test_a_dtype_the_chip_lacks_is_named(dgx):
    ops = [{"name": "a", "kind": "compute", "flops": 1e9, "dtype": "fp64"}]
    with pytest.raises(InputError, match=r"programs\[0\]\.ops\[0\]\.dtype: h100-sxm has no matrix unit rate for fp64"):
        replay(spmd(ops), dgx)


def test_step_is_never_below_its_bound(dgx):
    """Bound: the longest chain of compute on one stream, and the longest collective alone."""
    ops = [compute("a", 1e-3), {"name": "ar", "kind": "all-reduce", "bytes": 1 << 28, "async": True},
           compute("b", 2e-3, stream="other"), compute("c", 5e-4, deps=["ar"])]
    r = replay(spmd(ops), dgx, options=ReplayOptions(timeline=True))
    comm = max(s.end_ps - s.start_ps for s in r.segments if s.lane == "comm") * 1e-12
    assert r.step_time_s >= max(1e-3 + 5e-4, 2e-3, comm)


def test_a_measured_duration_of_zero_is_an_instant_op(dgx):
    """Chakra and profilers record zero-length ops; they replay as instant, not refused."""
    from accelsim.system.replay import replay
    from tests.system.conftest import compute, spmd

    r = replay(spmd([compute("nothing", 0.0), compute("work", 1e-4, deps=["nothing"])], devices="0-1",
                    num_devices=8), dgx)
    assert r.step_time_s == pytest.approx(1e-4)
