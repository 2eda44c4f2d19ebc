"""``softmax``, ``layernorm``, ``rmsnorm``: traces are valid, every byte and flop is
accounted exactly (masked last program and two-pass column loop included), and the
simulated kernels sit on the HBM roofline."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.engine.programs import program_costs, program_templates, program_vars, repeats
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import split_params
from accelsim.trace.kernel import parse_trace

NAMES = ("softmax", "layernorm", "rmsnorm")
SIZE = {"fp32": 4, "bf16": 2, "fp16": 2}
WEIGHTS = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}
STATS = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}
# (vector flops per element, per row; special-function evaluations per element, per row)
ONE_PASS_WORK = {"softmax": (4, 0, 1, 0), "layernorm": (7, 3, 0, 1), "rmsnorm": (4, 2, 0, 1)}
TWO_PASS_WORK = {"softmax": (5, 0, 2, 0), "layernorm": (7, 5, 0, 1), "rmsnorm": (4, 2, 0, 1)}


@pytest.fixture(scope="module")
def chips():
    return {name: load_arch(name) for name in ("h100-sxm", "tpu-v5e")}


def build(name, chip, config=None, **params):
    family = get_family(name)
    params, _, _ = split_params(family, {k: str(v) for k, v in params.items()})
    config = family.resolve_config(params, {k: str(v) for k, v in (config or {}).items()}, chip)
    return params, family.build(params, config, chip)


def tensor_totals(trace) -> Counter:
    """Bytes moved per (tensor, direction) over all programs, from the trace alone."""
    variables = program_vars(trace)
    template_of = program_templates(trace)
    totals: Counter = Counter()
    for index, template in enumerate(trace.templates):
        members = (template_of == index).nonzero()[0]
        for step in template.steps:
            count = int(repeats(step, variables, members).sum())
            for transfer in step.transfers:
                totals[transfer.tensor, transfer.direction] += count * transfer.bytes
    return totals


def roofline_bytes(name, rows, cols, dtype) -> int:
    """Each input read once, each output written once."""
    size = SIZE[dtype]
    return 2 * rows * cols * size + WEIGHTS[name] * cols * size + STATS[name] * rows * 4


SHAPES = [
    (4096, 1024, "fp32", {}),  # one row per program
    (1000, 100, "bf16", {}),  # several rows per program, masked last program
    (777, 3000, "fp16", {"block_rows": 2, "num_warps": 8}),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize(("rows", "cols", "dtype", "config"), SHAPES)
def test_one_pass_bytes_and_flops_are_exact(chips, name, arch, rows, cols, dtype, config):
    chip = chips[arch]
    if arch == "tpu-v5e":
        config = {"block_rows": 64} if config else {}
    _, trace = build(name, chip, config, rows=rows, cols=cols, dtype=dtype)
    parse_trace(json.loads(trace.model_dump_json()), "round trip")
    size = SIZE[dtype]
    totals = tensor_totals(trace)
    assert totals["X", "read"] == rows * cols * size
    assert totals["Y", "write"] == rows * cols * size
    for stat in {"layernorm": ("mean", "rstd"), "rmsnorm": ("rstd",), "softmax": ()}[name]:
        assert totals[stat, "write"] == rows * 4
    # GPU programs each read the parameters (the L2 serves repeats); a Pallas block with a
    # constant index is copied once.
    param_reads = trace.num_programs if chip.kind == "gpu" else 1
    for weight in {"layernorm": ("W", "B"), "rmsnorm": ("W",), "softmax": ()}[name]:
        assert totals[weight, "read"] == param_reads * cols * size

    costs = program_costs(trace, chip)
    assert costs.read_bytes.sum() == sum(v for (_, d), v in totals.items() if d == "read")
    assert costs.write_bytes.sum() == sum(v for (_, d), v in totals.items() if d == "write")
    flops, row_flops, special, row_special = ONE_PASS_WORK[name]
    assert costs.flops.sum() == rows * (flops * cols + row_flops)
    assert costs.special_ops.sum() == rows * (special * cols + row_special)
    assert costs.matrix_flops.sum() == 0


@pytest.mark.parametrize("name", NAMES)
def test_rows_too_long_for_registers_read_the_input_twice(chips, name):
    chip = chips["h100-sxm"]
    rows, cols = 64, 100_000  # 131072 fp32 values per row: over the register budget of any program
    _, trace = build(name, chip, {"block_rows": 1, "num_warps": 8}, rows=rows, cols=cols, dtype="bf16")
    totals = tensor_totals(trace)
    assert totals["X", "read"] == 2 * rows * cols * 2
    assert totals["Y", "write"] == rows * cols * 2
    assert trace.kernel.resources.registers_per_thread <= 255
    costs = program_costs(trace, chip)
    flops, row_flops, special, row_special = TWO_PASS_WORK[name]
    assert costs.flops.sum() == rows * (flops * cols + row_flops)
    assert costs.special_ops.sum() == rows * (special * cols + row_special)


def test_several_rows_that_do_not_fit_are_bad_input(chips):
    chip = chips["h100-sxm"]
    with pytest.raises(InputError) as caught:
        build("rmsnorm", chip, {"block_rows": 4, "num_warps": 4}, rows=64, cols=100_000)
    assert caught.value.field == "params.block_rows"


def test_gpu_default_gives_short_rows_several_per_program(chips):
    chip = chips["h100-sxm"]
    family = get_family("softmax")
    assert family.default_config({"rows": 4096, "cols": 128, "dtype": "bf16"}, chip)["block_rows"] == 8
    assert family.default_config({"rows": 4096, "cols": 8192, "dtype": "bf16"}, chip)["block_rows"] == 1


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("name", NAMES)
def test_config_space_builds(chips, arch, name):
    chip = chips[arch]
    family = get_family(name)
    params = {"rows": 4096, "cols": 4096, "dtype": "bf16"}
    space = family.config_space(params, chip)
    assert space and space[0] == family.default_config(params, chip)
    for config in space:
        family.check(params, config, chip)
        assert family.build(params, config, chip).num_programs >= 1


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("name", NAMES)
def test_large_rows_run_at_the_hbm_roofline(chips, arch, name):
    chip = chips[arch]
    rows, cols, dtype = 32768, 8192, "bf16"
    _, trace = build(name, chip, rows=rows, cols=cols, dtype=dtype)
    sim = simulate_kernel(trace, chip)
    bound_s = roofline_bytes(name, rows, cols, dtype) / chip.hbm.bandwidth_bytes_per_s
    assert bound_s <= sim.latency_s <= 3 * bound_s
    assert sim.bound == "hbm"


@pytest.mark.parametrize("arch", ["h100-sxm", "tpu-v5e"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("rows", "cols", "dtype"), [(1000, 100, "fp32"), (8, 65536, "bf16"), (1, 512, "fp16")])
def test_small_rows_never_beat_the_roofline(chips, arch, name, rows, cols, dtype):
    chip = chips[arch]
    _, trace = build(name, chip, rows=rows, cols=cols, dtype=dtype)
    sim = simulate_kernel(trace, chip)
    assert sim.latency_s >= roofline_bytes(name, rows, cols, dtype) / chip.hbm.bandwidth_bytes_per_s


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"rows": "0", "cols": "8"}, "rows"),
        ({"rows": "8", "cols": "wide"}, "cols"),
        ({"rows": "8"}, "cols"),
        ({"rows": "8", "cols": "8", "dtype": "fp8"}, "dtype"),
        ({"rows": "8", "cols": "8", "eps": "1e-5"}, "eps"),
        ({"rows": "8", "cols": "8", "num_warps": "3"}, "num_warps"),
    ],
)
def test_bad_parameters_name_the_field(chips, given, field):
    family = get_family("layernorm")
    with pytest.raises(InputError) as caught:
        params, config, _ = split_params(family, given)
        family.resolve_config(params, config, chips["h100-sxm"])
    assert caught.value.field == f"params.{field}"


@pytest.mark.parametrize(("arch", "config", "field"), [
    ("h100-sxm", {"block_rows": "3"}, "block_rows"),
    ("tpu-v5e", {"block_rows": "12"}, "block_rows"),
    ("tpu-v5e", {"block_rows": "8"}, "cols"),
])
def test_bad_configs_name_the_field(chips, arch, config, field):
    family = get_family("rmsnorm")
    params = {"rows": 100, "cols": 4 * 2**20 if field == "cols" else 4096, "dtype": "bf16"}
    with pytest.raises(InputError) as caught:
        family.resolve_config(params, config, chips[arch])
    assert caught.value.field == f"params.{field}"


def test_simulate_cli_runs_rmsnorm(cli):
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", "rmsnorm",
                 "--param", "rows=4096", "--param", "cols=8192", "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["kernel"] == "rmsnorm_bf16_4096x8192"
    assert summary["hbm_bytes"] >= roofline_bytes("rmsnorm", 4096, 8192, "bf16")
