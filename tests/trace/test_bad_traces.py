"""Every kind of malformed kernel trace is an InputError that names where it is wrong;
the CLI turns it into one line on stderr and exit status 2."""

from __future__ import annotations

import copy
import json

import pytest

from accelsim.errors import InputError
from accelsim.trace.kernel import load_trace, parse_trace

SOURCE = "bad.json"


@pytest.fixture
def trace_data() -> dict:
    """A small valid trace as decoded JSON: 4 programs, each reading its block of X."""
    return {
        "schema_version": 1,
        "kernel": {"name": "k", "grid": [4]},
        "tensors": {"X": {"shape": [4, 128], "dtype": "bf16"}},
        "templates": [{
            "name": "t",
            "steps": [{
                "transfers": [{"tensor": "X", "block": ["p0"], "bytes": 256}],
                "compute": [{"unit": "matrix", "flops": 4096.0, "dtype": "bf16", "shape": [16, 16, 8]}],
            }],
        }],
    }


def rejected(data) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_trace(data, SOURCE)
    return caught.value


STEP = "templates[0].steps[0]"
TRANSFER = f"{STEP}.transfers[0]"


def step(data) -> dict:
    return data["templates"][0]["steps"][0]


def transfer(data) -> dict:
    return step(data)["transfers"][0]


def compute(data) -> dict:
    return step(data)["compute"][0]


def test_the_fixture_is_valid(trace_data):
    assert parse_trace(trace_data, SOURCE).num_programs == 4


@pytest.mark.parametrize("version", [
    2, 0, "1", None,
    True,
])
def test_wrong_schema_version(trace_data, version):
    trace_data["schema_version"] = version
    error = rejected(trace_data)
    assert error.field == "schema_version"
    assert "reads version 1" in error.message


def test_missing_schema_version(trace_data):
    del trace_data["schema_version"]
    assert rejected(trace_data).field == "schema_version"


def test_not_an_object():
    assert "JSON object" in rejected([1, 2]).message


@pytest.mark.parametrize(
    ("mutate", "where", "what"),
    [
        (lambda d: transfer(d).update(tensor="Z"), f"{TRANSFER}.tensor", "unknown tensor 'Z'"),
        (lambda d: transfer(d).update(block=["q"]), f"{TRANSFER}.block", "unknown variable 'q'"),
        (lambda d: transfer(d).update(block=["p0+q"]), f"{TRANSFER}.block", "unknown variable 'q'"),
        (lambda d: step(d).update(repeat="n"), f"{STEP}.repeat", "unknown variable 'n'"),
        (lambda d: d.update(program_vars={"row": [0, 1, 2]}), "program_vars.row", "expected 4 values"),
        (lambda d: d.update(program_vars={"p0": [0, 1, 2, 3]}), "program_vars.p0", "reserved"),
        (lambda d: d.update(program_vars={"row": [0, 1, 2, 2**70]}), "program_vars.row", "from -2^48 to 2^48"),
        (lambda d: d.update(program_template="nope"), "program_template", "unknown template 'nope'"),
        (lambda d: d.update(program_template=[0, 0, 0]), "program_template", "expected 4 entries"),
        (lambda d: d["kernel"].update(dimension_semantics=["parallel", "arbitrary"]), "kernel.dimension_semantics",
         "one entry per grid axis"),
        (lambda d: compute(d).update(shape=[16, 16]), f"{STEP}.compute[0].shape", "[m, n, k]"),
    ],
    ids=["unknown-tensor", "unknown-block-var", "unknown-var-in-sum", "unknown-repeat-var", "program-vars-length",
         "reserved-program-var", "program-var-range", "unknown-template", "template-list-length", "semantics-length", "shape-length"],
)
def test_inconsistent_references_name_the_field(trace_data, mutate, where, what):
    mutate(trace_data)
    line = rejected(trace_data).one_line()
    assert line.startswith(f"{SOURCE}: {where}: ")
    assert what in line


@pytest.mark.parametrize(
    ("mutate", "field", "what"),
    [
        (lambda d: transfer(d).update(bytes=-5), f"{TRANSFER}.bytes", "more than 0"),
        (lambda d: transfer(d).update(bytes=0), f"{TRANSFER}.bytes", "more than 0"),
        (lambda d: compute(d).update(flops=-1.0), f"{STEP}.compute[0].flops", "at least 0"),
        (lambda d: d["kernel"].update(grid=[0]), "kernel.grid[0]", "more than 0"),
        (lambda d: transfer(d).update(block=[1.5]), f"{TRANSFER}.block[0]", "integer"),
        (lambda d: transfer(d).update(block=["p0-1"]), f"{TRANSFER}.block[0]", "sum like"),
        (lambda d: transfer(d).update(direction="sideways"), f"{TRANSFER}.direction", "'read' or 'write'"),
        (lambda d: d["tensors"]["X"].update(dtype="bf17"), "tensors.X.dtype", "'bf16'"),
        (lambda d: transfer(d).update(levle="hbm"), f"{TRANSFER}.levle", "unknown field"),
        (lambda d: d.update(tensorz={}), "tensorz", "unknown field"),
        (lambda d: d["kernel"].pop("grid"), "kernel.grid", "missing required field"),
        (lambda d: compute(d).update(flops=1e20), f"{STEP}.compute[0]", "more than the shape computes"),
        (lambda d: compute(d).update(flops=1e308), f"{STEP}.compute[0].flops", "at most 1e+30"),
        (lambda d: transfer(d).update(block=[True]), f"{TRANSFER}.block[0]", "got true"),
        (lambda d: d["kernel"].update(name="k\x1b[2J"), "kernel.name", "printable"),
    ],
    ids=["negative-bytes", "zero-bytes", "negative-flops", "empty-grid-axis", "fractional-index", "bad-index-sum",
         "bad-direction", "bad-dtype", "unknown-field", "unknown-top-level-field", "missing-field",
         "flops-past-the-shape", "flops-past-any-run", "boolean-index", "control-characters"],
)
def test_bad_values_name_the_field(trace_data, mutate, field, what):
    mutate(trace_data)
    error = rejected(trace_data)
    assert error.field == field
    assert what in error.message


def test_field_path_keeps_tensor_names_that_look_like_type_tags(trace_data):
    trace_data["tensors"]["intermediate"] = {"shape": [4], "dtype": "bf17"}
    assert rejected(trace_data).field == "tensors.intermediate.dtype"


def test_invalid_json_reports_its_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "schema_version": 1,\n  "kernel": {"name": "k",, "grid": [4]}\n}\n')
    with pytest.raises(InputError) as caught:
        load_trace(path)
    assert caught.value.line == 3
    assert caught.value.one_line().startswith(f"{path}:3: invalid JSON")


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as caught:
        load_trace(tmp_path / "absent.json")
    assert "cannot read trace" in caught.value.message


def test_load_trace_locates_errors_in_its_file(tmp_path, trace_data):
    transfer(trace_data)["bytes"] = -5
    path = tmp_path / "negative.json"
    path.write_text(json.dumps(trace_data))
    with pytest.raises(InputError) as caught:
        load_trace(path)
    assert caught.value.source == str(path)
    assert caught.value.field == f"{TRANSFER}.bytes"


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(schema_version=7), "schema_version"),
        (lambda d: transfer(d).update(tensor="Z"), f"{TRANSFER}.tensor"),
        (lambda d: transfer(d).update(bytes=-5), f"{TRANSFER}.bytes"),
    ],
    ids=["version", "unknown-tensor", "negative-bytes"],
)
def test_cli_prints_one_line_and_exits_2(cli, tmp_path, trace_data, mutate, fragment):
    data = copy.deepcopy(trace_data)
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, indent=2))
    result = cli("simulate", "--arch", "h100-sxm", str(path))
    assert result.code == 2
    assert result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    assert str(path) in lines[0] and fragment in lines[0]


def test_cli_reports_invalid_json_with_its_line(cli, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "schema_version": 1,\n  oops\n}\n')
    result = cli("simulate", "--arch", "h100-sxm", str(path))
    assert result.code == 2
    assert result.err.strip().splitlines() == [result.err.strip()]
    assert f"{path}:3:" in result.err


@pytest.mark.parametrize("change, field", [
    (lambda d: step(d).update(repeat=-1), f"{STEP}.repeat"),
    (lambda d: transfer(d).update(block=[-1]), f"{TRANSFER}.block"),
])
def test_negative_counts_are_refused(trace_data, change, field):
    change(trace_data)
    assert field in rejected(trace_data).one_line()


def test_an_engine_error_on_a_trace_names_the_file(cli):
    from pathlib import Path

    trace = Path(__file__).resolve().parents[2] / "traces" / "pallas" / "matmul_512.json"  # TPU-sized VMEM blocks
    result = cli("simulate", "--arch", "h100", str(trace))
    assert result.code == 2 and f"{trace}: kernel.resources.local_memory_bytes" in result.err


def test_a_multicast_write_is_refused(trace_data):
    transfer(trace_data).update(direction="write", multicast=2)
    assert "only a read is multicast" in rejected(trace_data).one_line()


def test_a_kernel_name_with_control_characters_is_refused(trace_data):
    trace_data["kernel"]["name"] = "k\x1b[31m"
    assert "kernel.name: expected printable text" in rejected(trace_data).one_line()


# ---------------------------------------------------------------- blocks inside their tensor


@pytest.mark.parametrize("block", [[], ["p0"], ["p0", 0]], ids=["whole-tensor", "leading-axis", "every-axis"])
def test_a_block_indexes_leading_axes_and_spans_the_rest(trace_data, block):
    transfer(trace_data)["block"] = block
    assert parse_trace(trace_data, SOURCE).templates[0].steps[0].transfers[0].block == block


def test_more_block_indices_than_tensor_axes_are_refused(trace_data):
    transfer(trace_data)["block"] = ["p0", 0, 0]
    assert rejected(trace_data).one_line() == (
        f"{SOURCE}: {TRANSFER}.block: expected at most 2 indices, one per axis of tensor 'X' (shape [4, 128]), got 3")


@pytest.mark.parametrize(("block", "program_vars", "detail"), [
    (["p0+1"], {}, "axis 0), got 4 ('p0+1' in program 3)"),
    (["p0", 128], {}, "from 0 to 127 (tensor 'X' has 128 elements along axis 1), got 128"),
    (["row"], {"row": [0, -1, 2, 3]}, "axis 0), got -1 ('row' in program 1)"),
], ids=["sum-past-the-end", "integer-past-the-end", "negative-program-var"])
def test_a_block_index_outside_its_tensor_is_refused(trace_data, block, program_vars, detail):
    transfer(trace_data)["block"] = block
    trace_data["program_vars"] = program_vars
    line = rejected(trace_data).one_line()
    axis = len(block) - 1
    assert line.startswith(f"{SOURCE}: {TRANSFER}.block[{axis}]: expected a block index from 0 to ")
    assert line.endswith(detail)


def looping_trace(trace_data, first: list[int], repeats: list[int]) -> dict:
    """Program i reads blocks ``first[i] + k`` of X's axis 0 (4 long), ``repeats[i]`` times."""
    trace_data["program_vars"] = {"first": first, "n": repeats}
    step(trace_data).update(repeat="n", loop_var="k")
    transfer(trace_data)["block"] = ["first+k"]
    return trace_data


def test_a_loop_is_checked_at_its_last_iteration_in_each_program(trace_data):
    line = rejected(looping_trace(trace_data, [0, 1, 2, 3], [4, 3, 3, 1])).one_line()
    assert line.endswith("got 4 ('first+k' in program 2, k = 2)")


def test_programs_that_never_reach_the_extremes_together_pass(trace_data):
    # first + k stays below 4 in every program, though max(first) + max(n) - 1 = 6
    trace = parse_trace(looping_trace(trace_data, [0, 1, 2, 3], [4, 3, 2, 1]), SOURCE)
    assert trace.program_vars["first"] == [0, 1, 2, 3]


def test_a_step_no_program_runs_is_not_bounded(trace_data):
    assert parse_trace(looping_trace(trace_data, [9, 9, 9, 9], [0, 0, 0, 0]), SOURCE).num_programs == 4
    trace_data["program_vars"]["n"] = [0, 0, 1, 0]
    assert rejected(trace_data).one_line().endswith("got 9 ('first+k' in program 2, k = 0)")


def test_only_the_programs_running_a_template_bound_its_blocks(trace_data):
    # X has 2 rows; programs 2 and 3 run a template that does not read it
    trace_data["tensors"]["X"]["shape"] = [2, 128]
    trace_data["templates"].append({"name": "other", "steps": [{"compute": [{"unit": "vector", "flops": 1.0}]}]})
    trace_data["program_template"] = [0, 0, 1, 1]
    assert parse_trace(trace_data, SOURCE).num_programs == 4
    trace_data["program_template"] = [0, 1, 0, 1]
    assert rejected(trace_data).one_line().endswith("got 2 ('p0' in program 2)")


@pytest.mark.parametrize(("dtype", "shape", "most"), [("bf16", [4, 128], 1024), ("fp4", [3, 3], 5)])
def test_transfer_bytes_stop_at_the_whole_tensor(trace_data, dtype, shape, most):
    trace_data["tensors"]["X"] = {"shape": shape, "dtype": dtype}
    transfer(trace_data).update(block=[0], bytes=most)
    parse_trace(trace_data, SOURCE)
    transfer(trace_data)["bytes"] = most + 1
    assert rejected(trace_data).one_line() == (
        f"{SOURCE}: {TRANSFER}.bytes: expected at most {most:,}, the whole of tensor 'X' (shape {shape}, {dtype}), "
        f"got {most + 1:,}")


# ---------------------------------------------------------------- numbers are numbers


@pytest.mark.parametrize(("mutate", "field", "given"), [
    (lambda d: compute(d).update(flops="4096"), f"{STEP}.compute[0].flops", '"4096"'),
    (lambda d: compute(d).update(flops=True), f"{STEP}.compute[0].flops", "true"),
    (lambda d: compute(d).update(useful="no"), f"{STEP}.compute[0].useful", '"no"'),
    (lambda d: d.update(program_vars={"row": [0, "1", 2, 3]}), "program_vars.row[1]", '"1"'),
    (lambda d: transfer(d).update(bytes=256.0), f"{TRANSFER}.bytes", "256.0"),
], ids=["flops-string", "flops-bool", "useful-string", "program-var-string", "bytes-float"])
def test_a_value_of_the_wrong_json_type_is_refused(trace_data, mutate, field, given):
    mutate(trace_data)
    error = rejected(trace_data)
    assert error.field == field
    assert error.message.endswith(f", got {given}")


def test_flops_may_be_an_integer(trace_data):
    compute(trace_data)["flops"] = 4096
    assert parse_trace(trace_data, SOURCE).templates[0].steps[0].compute[0].flops == 4096.0


# ---------------------------------------------------------------- grids the chip can launch


def test_a_gpu_refuses_a_grid_of_more_than_three_axes(cli, tmp_path, trace_data):
    trace_data["kernel"]["grid"] = [1, 1, 2, 2]
    path = tmp_path / "grid4.json"
    path.write_text(json.dumps(trace_data))
    result = cli("simulate", "--arch", "h100-sxm", str(path))
    assert result.code == 2 and result.out == ""
    assert result.err.strip() == (f"accelsim: error: {path}: kernel.grid: expected at most 3 axes on h100-sxm, a "
                                  "GPU (CUDA grids are x, y, z), got 4: [1, 1, 2, 2] (merge axes, or simulate it on "
                                  "a TPU)")


def test_a_gpu_refuses_more_than_65535_programs_along_y(cli, tmp_path, trace_data):
    trace_data["kernel"]["grid"] = [1, 65536]
    path = tmp_path / "tall.json"
    path.write_text(json.dumps(trace_data))
    result = cli("simulate", "--arch", "h100-sxm", str(path))
    assert result.code == 2
    assert "kernel.grid: expected at most 65,535 programs along axis 1 (y) on h100-sxm" in result.err


def test_attention_with_more_than_65535_heads_in_all_simulates_on_a_gpu(cli):
    """Its grid is (query blocks, heads, batch), as FlashAttention launches it: batch x heads
    past CUDA's 65,535 along y is no limit."""
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", "attention", "--param", "batch=4096",
                 "--param", "heads=32", "--param", "seq_q=64", "--param", "head_dim=64", "--param", "block_m=64",
                 "--param", "block_n=64", "--param", "num_stages=2", "--param", "num_warps=4")
    assert result.code == 0, result.err


def test_a_tpu_runs_a_grid_of_more_than_three_axes(cli, tmp_path, trace_data):
    trace_data["kernel"].update(grid=[1, 1, 2, 2], launch_order="last_axis_fastest")
    path = tmp_path / "grid4.json"
    path.write_text(json.dumps(trace_data))
    result = cli("simulate", "--arch", "tpu-v5e", str(path))
    assert result.code == 0, result.err
