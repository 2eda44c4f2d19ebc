"""``copy``: every byte is read once and written once (the last program moves the
remainder), and a large copy runs at the HBM roofline."""

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



@pytest.fixture(scope="module")
def chips():
    return {name: load_arch(name) for name in ("h100-sxm", "tpu-v5e")}


def build(chip, nbytes, config=None):
    family = get_family("copy")
    params, _, _ = split_params(family, {"bytes": str(nbytes)})
    config = family.resolve_config(params, {k: str(v) for k, v in (config or {}).items()}, chip)
    return family.build(params, config, chip)


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("nbytes", [1, 4096, 10**9 + 7, 3 * 2**20])
def test_every_byte_is_read_and_written_once(chips, arch, nbytes):
    chip = chips[arch]
    trace = build(chip, nbytes)
    parse_trace(json.loads(trace.model_dump_json()), "round trip")
    costs = program_costs(trace, chip)
    assert costs.read_bytes.sum() == nbytes
    assert costs.write_bytes.sum() == nbytes
    assert costs.flops.sum() == 0


def test_gpu_programs_move_block_bytes_in_unrolled_vector_iterations(chips):
    chip = chips["h100-sxm"]
    trace = build(chip, 10 * 2**16 + 100)  # ten 64 KiB programs and a 100-byte remainder
    assert trace.num_programs == 11
    costs = program_costs(trace, chip)
    assert costs.read_bytes.tolist() == [2**16] * 10 + [100]
    assert costs.iterations.tolist() == [8] * 10 + [1]  # 4 warps x 32 x 16 B x 4 = 8 KiB each


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
def test_large_copy_runs_at_the_hbm_roofline(chips, arch):
    chip = chips[arch]
    nbytes = 2**30
    sim = simulate_kernel(build(chip, nbytes), chip)
    bound_s = 2 * nbytes / chip.hbm.bandwidth_bytes_per_s
    assert bound_s <= sim.latency_s <= 3 * bound_s
    assert sim.bound == "hbm"


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("nbytes", [1, 100_000, 5 * 2**20 + 3])
def test_small_copies_never_beat_the_roofline(chips, arch, nbytes):
    chip = chips[arch]
    sim = simulate_kernel(build(chip, nbytes), chip)
    assert sim.latency_s >= 2 * nbytes / chip.hbm.bandwidth_bytes_per_s


@pytest.mark.parametrize(
    ("arch", "given", "field"),
    [
        ("h100-sxm", {"bytes": "0"}, "bytes"),
        ("h100-sxm", {"bytes": "1GiB"}, "bytes"),
        ("h100-sxm", {}, "bytes"),
        ("h100-sxm", {"bytes": "64", "dtype": "bf16"}, "dtype"),
        ("h100-sxm", {"bytes": "64", "block_bytes": "100"}, "block_bytes"),
        ("h100-sxm", {"bytes": "64", "num_warps": "5"}, "num_warps"),
        ("tpu-v5e", {"bytes": "64", "block_bytes": "1000"}, "block_bytes"),
        ("tpu-v5e", {"bytes": "64", "block_bytes": str(64 * 2**20)}, "block_bytes"),
    ],
)
def test_bad_parameters_name_the_field(chips, arch, given, field):
    family = get_family("copy")
    with pytest.raises(InputError) as caught:
        params, config, _ = split_params(family, given)
        family.resolve_config(params, config, chips[arch])
    assert caught.value.field == f"params.{field}"


def test_config_space_fits(chips):
    family = get_family("copy")
    for chip in chips.values():
        space = family.config_space({"bytes": 2**30}, chip)
        assert space[0] == family.default_config({"bytes": 2**30}, chip)
        for config in space:
            family.check({"bytes": 2**30}, config, chip)


def test_simulate_cli_runs_copy_on_tpu(cli):
    result = cli("simulate", "--arch", "tpu-v5e", "--kernel", "copy", "--param", "bytes=1000000", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["hbm_bytes"] == 2_000_000
