"""Malformed system traces fail with one line naming the field; a cycle is an error, not a hang."""

from __future__ import annotations

import copy
import json

import pytest

from accelsim.errors import InputError
from accelsim.system.trace import load_system_trace, parse_system_trace

GOOD = {
    "schema_version": 1, "num_devices": 8,
    "programs": [{"name": "spmd", "devices": ["0-7"], "ops": [
        {"name": "a", "kind": "compute", "flops": 1e12, "bytes": 1e9},
        {"name": "ar", "kind": "all-reduce", "bytes": 1e8, "deps": ["a"], "async": True},
        {"name": "b", "kind": "compute", "duration_s": 1e-3},
        {"name": "d", "kind": "done", "start": "ar"},
    ]}],
}


def error_of(change) -> str:
    data = copy.deepcopy(GOOD)
    change(data)
    with pytest.raises(InputError) as info:
        parse_system_trace(data, "t.json")
    line = info.value.one_line()
    assert "\n" not in line
    return line


def op(data, i):
    return data["programs"][0]["ops"][i]


def test_the_good_trace_parses():
    assert parse_system_trace(GOOD, "t.json").num_ops == 32


@pytest.mark.parametrize("change, expected", [
    (lambda d: op(d, 0).update(kind="matmul"), "t.json: programs[0].ops[0].kind: unknown op kind 'matmul'"),
    (lambda d: op(d, 0).update(deps=["nope"]), "t.json: programs[0].ops[0].deps: unknown op 'nope'"),
    (lambda d: op(d, 2).update(name="a"), "t.json: programs[0].ops[2].name: duplicate op name 'a'"),
    (lambda d: op(d, 0).update(duration_s=1.0), "programs[0].ops[0]: a compute op needs exactly one of"),
    (lambda d: op(d, 2).pop("duration_s"), "programs[0].ops[2]: a compute op needs exactly one of"),
    (lambda d: op(d, 1).pop("bytes"), "programs[0].ops[1].bytes: needed by every all-reduce op"),
    (lambda d: op(d, 1).update(groups=[[0, 1, 2, 3], [3, 4, 5, 6, 7]]),
     "programs[0].ops[1].groups[1]: device 3 is in more than one group"),
    (lambda d: op(d, 1).update(groups=[[0, 1, 2, 3], [4, 5, 6]]),
     "programs[0].ops[1].groups: device 7 of this program is in no group"),
    (lambda d: op(d, 1).update(groups=[list(range(9))]), "programs[0].ops[1].groups[0]: device 8 is out of range"),
    (lambda d: op(d, 1).update(peer=3), "programs[0].ops[1].peer: not a field of a all-reduce op"),
    (lambda d: op(d, 3).update(start="b"), "programs[0].ops[3].start: 'b' is not an async op"),
    (lambda d: op(d, 3).update({"async": True}), "programs[0].ops[3].async: only communication ops are async"),
    (lambda d: op(d, 2).update(unknown=1), "programs[0].ops[2].unknown: unknown field"),
    (lambda d: d["programs"][0].update(devices=["0-8"]), "programs[0].devices: device 8 is out of range"),
    (lambda d: d["programs"][0].update(devices=["0-999999999999"]), "is past the 1,048,576 devices"),  # not expanded
    (lambda d: d.update(num_devices=2**40), "num_devices: expected a number at most 1048576"),
    (lambda d: op(d, 1).update(bytes=1e308), "programs[0].ops[1].bytes: expected a number at most 1e+30"),
    (lambda d: d.update(name="\ud800"), "t.json: name: expected printable text"),
    (lambda d: op(d, 0).update(stream="s\x1b"), "programs[0].ops[0].stream: expected printable text"),
    (lambda d: d["programs"][0].update(devices=["\u0660-\u0667"]), "expected a device id or an inclusive range"),
    (lambda d: d["programs"].append({"name": "x", "devices": [3], "ops": []}),
     "programs[1].devices: device 3 is listed also in programs[0]"),
    (lambda d: d.update(schema_version=2), "t.json: schema_version: unsupported schema_version 2"),
    (lambda d: d["programs"][0].update(devices=[0, 7.5]), "t.json: programs[0].devices[1]: Input should be a valid"),
    (lambda d: d["programs"][0]["ops"].__setitem__(1, {"name": "ar", "kind": "collective-permute", "bytes": 8,
                                                        "pairs": [[0, 1], [0, 2]]}),
     "programs[0].ops[1].pairs[1]: device 0 is a source twice"),
    (lambda d: d["programs"][0]["ops"].__setitem__(1, {"name": "ar", "kind": "collective-permute", "bytes": 8,
                                                        "pairs": [[0, 1], [2, 1]]}),
     "programs[0].ops[1].pairs[1]: device 1 is a target twice"),
])
def test_one_line_naming_the_field(change, expected):
    assert expected in error_of(change)


@pytest.mark.parametrize("change, expected", [
    (lambda d: op(d, 0).update(flops="1e12"), 'programs[0].ops[0].flops: Input should be a valid number, got "1e12"'),
    (lambda d: op(d, 0).update(flops=True), "programs[0].ops[0].flops: Input should be a valid number, got true"),
    (lambda d: op(d, 1).update(bytes="1e8"), 'programs[0].ops[1].bytes: Input should be a valid number, got "1e8"'),
    (lambda d: op(d, 2).update(duration_s="0.001"),
     'programs[0].ops[2].duration_s: Input should be a valid number, got "0.001"'),
    (lambda d: op(d, 1).update({"async": "false"}),
     'programs[0].ops[1].async: Input should be a valid boolean, got "false"'),
    (lambda d: d["programs"][0]["ops"].__setitem__(1, {"name": "ar", "kind": "send", "bytes": 8, "peer_offset": "1"}),
     'programs[0].ops[1].peer_offset: Input should be a valid integer, got "1"'),
], ids=["flops-string", "flops-bool", "bytes-string", "duration-string", "async-string", "peer-offset-string"])
def test_numbers_and_flags_written_as_strings_are_refused(change, expected):
    assert error_of(change) == f"t.json: {expected}"


def test_whole_and_integer_numbers_are_numbers():
    data = copy.deepcopy(GOOD)
    op(data, 0).update(flops=1000000000000, bytes=1e15)
    op(data, 1)["bytes"] = 100000000
    trace = parse_system_trace(data, "t.json")
    assert trace.programs[0].ops[0].bytes == 1e15 and trace.programs[0].ops[1].bytes == 1e8


def test_an_empty_stream_name_is_refused():
    line = error_of(lambda d: op(d, 0).update(stream=""))
    assert line == "t.json: programs[0].ops[0].stream: String should have at least 1 character"


def test_cli_refuses_a_number_as_a_string_in_one_line(cli, tmp_path):
    data = copy.deepcopy(GOOD)
    op(data, 0)["flops"] = "1e12"
    path = tmp_path / "step.json"
    path.write_text(json.dumps(data))
    result = cli("replay", str(path), "--system", "dgx-h100")
    assert result.code == 2 and result.out == "" and "Traceback" not in result.err
    expected = f'{path}: programs[0].ops[0].flops: Input should be a valid number, got "1e12"'
    assert result.err.strip() == f"accelsim: error: {expected}"


def test_a_dependency_cycle_is_an_error_naming_its_ops():
    line = error_of(lambda d: op(d, 0).update(deps=["b"]))
    assert line == "t.json: programs[0].ops: dependency cycle: a -> ar -> b -> a"


def test_a_cycle_through_stream_order_is_found():
    line = error_of(lambda d: op(d, 0).update(ctrl_deps=["d"]))
    assert "dependency cycle" in line and "d -> a" in line


def test_a_long_chain_is_checked_without_recursion():
    ops = [{"name": f"op{i}", "kind": "compute", "duration_s": 1e-6, "stream": f"s{i % 2}",
            "deps": [f"op{i - 1}"] if i else [f"op{49_999}"]} for i in range(50_000)]
    data = {"schema_version": 1, "num_devices": 1, "programs": [{"name": "p", "devices": [0], "ops": ops}]}
    with pytest.raises(InputError, match="dependency cycle"):
        parse_system_trace(data, "t.json")


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"schema_version": 1,\n  "num_devices": }')
    with pytest.raises(InputError, match=r"bad.json:2: invalid JSON"):
        load_system_trace(path)


def test_a_roundtrip_keeps_the_trace(tmp_path):
    from accelsim.system.trace import save_system_trace

    trace = parse_system_trace(GOOD, "t.json")
    save_system_trace(trace, tmp_path / "t.json")
    assert load_system_trace(tmp_path / "t.json") == trace
    assert json.loads((tmp_path / "t.json").read_text())["programs"][0]["ops"][1]["async"] is True


def test_a_kernel_trace_the_chip_cannot_run_is_named_not_the_system_trace(cli, tmp_path):
    kernel = {"schema_version": 1, "kernel": {"name": "k", "grid": [1, 1, 2, 2]},
              "tensors": {"X": {"shape": [4, 128], "dtype": "bf16"}},
              "templates": [{"name": "t", "steps": [{"compute": [{"unit": "vector", "flops": 128.0}]}]}]}
    (tmp_path / "grid4.json").write_text(json.dumps(kernel))
    step = {"schema_version": 1, "num_devices": 8, "programs": [{"name": "p", "devices": ["0-7"], "ops": [
        {"name": "k", "kind": "compute", "kernel_trace": "grid4.json"}]}]}
    (tmp_path / "step.json").write_text(json.dumps(step))
    result = cli("replay", str(tmp_path / "step.json"), "--system", "dgx-h100")
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert result.err.startswith(f"accelsim: error: {tmp_path / 'grid4.json'}: kernel.grid: expected at most 3 axes")


@pytest.mark.parametrize("change, expected", [
    (lambda d: op(d, 1).update(bytes=5e-324), "programs[0].ops[1].bytes: expected 0 or at least 0.125 bytes"),
    (lambda d: op(d, 0).update(bytes=1e-300), "programs[0].ops[0].bytes: expected 0 or at least 0.125 bytes"),
    (lambda d: op(d, 0).update(flops=None, bytes=None, kernel_trace="k\x00.json"),
     "programs[0].ops[0].kernel_trace: expected a file path (printable text), got 'k\\x00.json'"),
], ids=["subnormal-collective", "subnormal-roofline", "nul-path"])
def test_sizes_no_op_can_have_and_paths_no_file_can_have(change, expected):
    assert expected in error_of(change)


def test_a_bit_is_the_least_an_op_moves():
    data = copy.deepcopy(GOOD)
    op(data, 1).update(bytes=0.125)
    op(data, 0).update(bytes=0)
    assert parse_system_trace(data, "t.json").programs[0].ops[1].bytes == 0.125
