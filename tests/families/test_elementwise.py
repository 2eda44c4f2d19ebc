"""``elementwise``: every element of every input is read once and of every output written
once (the last program handles the remainder); with one load per thread a program waits a
memory latency, so too few bytes in flight make it latency-bound (Little's law)."""

from __future__ import annotations

import json

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.programs import program_costs
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import split_params
from accelsim.trace.kernel import parse_trace

FAMILY = get_family("elementwise")


@pytest.fixture(scope="module")
def chips():
    return {name: load_arch(name) for name in ("h100-sxm", "tpu-v5e")}


def build(chip, given):
    params, config, _ = split_params(FAMILY, {k: str(v) for k, v in given.items()})
    return FAMILY.build(params, FAMILY.resolve_config(params, config, chip), chip)


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize(("inputs", "outputs"), [(0, 1), (1, 0), (1, 1), (2, 1), (3, 2)])
@pytest.mark.parametrize("elements", [1, 1000, 3 * 2**20 + 5])
def test_every_array_is_moved_once(chips, arch, inputs, outputs, elements):
    chip = chips[arch]
    trace = build(chip, {"elements": elements, "dtype": "bf16", "inputs": inputs, "outputs": outputs})
    parse_trace(json.loads(trace.model_dump_json()), "round trip")
    costs = program_costs(trace, chip)
    assert costs.read_bytes.sum() == inputs * elements * 2
    assert costs.write_bytes.sum() == outputs * elements * 2
    assert costs.flops.sum() == inputs * elements


def test_gpu_programs_follow_block_elements(chips):
    chip = chips["h100-sxm"]
    trace = build(chip, {"elements": 10 * 1024 + 2, "dtype": "fp64", "block_elements": 1024, "num_warps": 32})
    assert trace.num_programs == 11  # gpu-stream's max_buffer_size / blockSize + 1
    costs = program_costs(trace, chip)
    assert costs.read_bytes.tolist() == [8192] * 10 + [16]
    assert trace.kernel.pipeline_depth == 1


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
def test_large_kernels_run_at_the_hbm_roofline(chips, arch):
    chip = chips[arch]
    sim = simulate_kernel(build(chip, {"elements": 2**28, "dtype": "fp32", "inputs": 2}), chip)
    bound_s = 3 * 2**28 * 4 / chip.hbm.bandwidth_bytes_per_s
    assert bound_s <= sim.latency_s <= 1.5 * bound_s
    assert sim.bound == "hbm"


def test_bytes_in_flight_bound_the_bandwidth():
    """At 4 us of memory latency one double per thread (16 KiB per SM in flight) cannot keep
    HBM busy; sixteen per thread can."""
    chip = load_arch("h100-sxm", ["hbm.latency=4 us"])
    given = {"elements": 2**27, "dtype": "fp64", "outputs": 0}
    thin = simulate_kernel(build(chip, {**given, "block_elements": 1024, "num_warps": 32}), chip)
    deep = simulate_kernel(build(chip, {**given, "block_elements": 4096, "num_warps": 8}), chip)
    in_flight_s = 2**27 * 8 / (chip.num_cores * 2 * 1024 * 8) * 4e-6  # rounds x latency
    assert thin.latency_s >= in_flight_s
    assert deep.latency_s < thin.latency_s / 3


@pytest.mark.parametrize(
    ("arch", "given", "field"),
    [
        ("h100-sxm", {"elements": "0", "dtype": "fp32"}, "elements"),
        ("h100-sxm", {"elements": "64"}, "dtype"),
        ("h100-sxm", {"elements": "64", "dtype": "fp32", "inputs": "-1"}, "inputs"),
        ("h100-sxm", {"elements": "64", "dtype": "fp32", "inputs": "0", "outputs": "0"}, "inputs"),
        ("h100-sxm", {"elements": "64", "dtype": "fp32", "block_elements": "100", "num_warps": "1"}, "block_elements"),
        ("h100-sxm", {"elements": "64", "dtype": "fp32", "block_elements": "8192", "num_warps": "1"}, "block_elements"),
        ("h100-sxm", {"elements": "64", "dtype": "fp32", "num_warps": "33"}, "num_warps"),
            ("h100-sxm", {"elements": "64", "dtype": "fp32", "local_memory_bytes": "300000"}, "local_memory_bytes"),
            ("tpu-v5e", {"elements": "64", "dtype": "fp32", "local_memory_bytes": "1024"}, "local_memory_bytes"),
        ("tpu-v5e", {"elements": "64", "dtype": "fp64"}, "dtype"),
        ("tpu-v5e", {"elements": "64", "dtype": "bf16", "block_elements": "1024"}, "block_elements"),
        ("tpu-v5e", {"elements": "64", "dtype": "fp32", "block_elements": str(2**24)}, "block_elements"),
    ],
)
def test_bad_parameters_name_the_field(chips, arch, given, field):
    with pytest.raises(InputError) as caught:
        params, config, _ = split_params(FAMILY, given)
        FAMILY.resolve_config(params, config, chips[arch])
    assert caught.value.field == f"params.{field}"


def test_config_space_fits_and_auto_is_no_slower_than_default(chips):
    params = {"elements": 2**24, "dtype": "bf16", "inputs": 2, "outputs": 1}
    for chip in chips.values():
        space = FAMILY.config_space(params, chip)
        assert space[0] == FAMILY.default_config(params, chip)
        assert len(space) > 1
        for config in space:
            FAMILY.check(params, config, chip)


def test_simulate_cli_runs_a_residual_add(cli):
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", "elementwise", "--param", "elements=1000000",
                 "--param", "dtype=bf16", "--param", "inputs=2", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["hbm_bytes"] == 6_000_000


@pytest.mark.parametrize("warps", [1, 3, 32])
def test_reserved_local_memory_limits_the_programs_an_sm_holds(chips, warps):
    """A benchmark that reserves shared memory (gpu-stream's two blocks per SM) runs two
    programs per SM whatever its block size; the launch's own warp count is kept."""
    chip = chips["h100-sxm"]
    params, config, _ = split_params(FAMILY, {"elements": str(1 << 22), "dtype": "fp64", "num_warps": str(warps),
                                              "block_elements": str(32 * warps), "local_memory_bytes": "81920"})
    trace = FAMILY.build(params, FAMILY.resolve_config(params, config, chip), chip)
    sim = simulate_kernel(trace, chip)
    assert trace.kernel.resources.warps == warps
    assert (sim.programs_per_core, sim.occupancy_limit) == (2, "local_memory")
