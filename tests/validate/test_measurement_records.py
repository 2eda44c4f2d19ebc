"""A measurement record whose latency is not a positive number of seconds, or whose
params are not an object, and a file without a known family, its device or its
provenance, are refused by file and field before any simulation."""

import json

import pytest

from accelsim.errors import InputError
from accelsim.validate.compare import compare, read_measurements


HEADER = {"kind": "measurements", "schema_version": 1, "family": "copy", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}


def _file(tmp_path, record: dict, **header):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**HEADER, **header, "records": [record]}))
    return path


GOOD = {"id": "r", "family": "copy", "params": {"bytes": 1024}, "latency_s": 2e-6}


@pytest.mark.parametrize("change, field", [
    ({"latency_s": 0}, "records[0].latency_s"),
    ({"latency_s": -1e-6}, "records[0].latency_s"),
    ({"latency_s": "fast"}, "records[0].latency_s"),
    ({"latency_s": True}, "records[0].latency_s"),
    ({"latency_s": None}, "records[0].latency_s"),
    ({"latency_s": 1e300}, "records[0].latency_s"),  # past a day: a unit slip
    ({"params": [1024]}, "records[0].params"),
    ({"bytes": -1}, "records[0].bytes"),
    ({"flops": []}, "records[0].flops"),
    ({"measured": "x"}, "records[0].measured"),
    ({"latency_kind": "wall"}, "records[0].latency_kind"),
])
def test_bad_records_are_refused_by_field(tmp_path, change, field):
    with pytest.raises(InputError) as info:
        read_measurements([_file(tmp_path, {**GOOD, **change})])
    assert info.value.field == field and info.value.source.endswith("m.json")


def test_a_good_record_reads(tmp_path):
    (record,) = read_measurements([_file(tmp_path, GOOD)])
    assert record.latency_s == 2e-6 and record.params == {"bytes": 1024}


def test_a_record_id_twice_in_one_file_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**HEADER, "records": [GOOD, GOOD]}))
    with pytest.raises(InputError, match="duplicate record id 'r'"):
        read_measurements([path])


@pytest.mark.parametrize("header, field", [
    ({"family": "gemmm"}, "family"),
    ({"family": None}, "family"),
    ({"device": "h100-sxm"}, "device"),
    ({"device": {"name": "H100"}}, "device"),
    ({"provenance": None}, "provenance"),
    ({"provenance": {"date": None}}, "provenance"),
])
def test_bad_headers_are_refused_by_field(tmp_path, header, field):
    with pytest.raises(InputError) as info:
        read_measurements([_file(tmp_path, GOOD, **header)])
    assert info.value.field == field


def test_a_record_of_an_unknown_family_is_refused(tmp_path):
    with pytest.raises(InputError, match="unknown family 'cpoy'") as info:
        read_measurements([_file(tmp_path, {**GOOD, "family": "cpoy"})])
    assert info.value.field == "records[0].family"


def test_collective_files_are_passed_over(tmp_path):
    record = {"id": "c", "family": "collective", "params": {}, "latency_s": 1e-5}
    assert read_measurements([_file(tmp_path, record, family="collective")]) == []


def test_the_same_record_in_two_files_is_refused(tmp_path):
    first = _file(tmp_path, GOOD)
    second = tmp_path / "copy.json"
    second.write_text(first.read_text())
    with pytest.raises(InputError, match="also in") as info:
        read_measurements([first, second])
    assert info.value.field == "records[0].id" and info.value.source.endswith("copy.json")


def test_a_record_too_large_to_simulate_names_its_file_and_id(cli, tmp_path):
    for size, says in ((2**47, "params: the kernel would have"), (2**60, "params.bytes: expected an integer <= 2^48")):
        path = _file(tmp_path, {**GOOD, "params": {"bytes": size}})
        result = cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "out"))
        assert result.code == 2 and result.err.count("\n") == 1
        assert f"{path}: record 'r': {says}" in result.err and not (tmp_path / "out").exists()


def test_a_bad_parameter_names_the_record_and_its_params(cli, tmp_path):
    path = _file(tmp_path, {**GOOD, "params": {"bytes": "lots"}})
    for args in (("validate", "-o", str(tmp_path / "out")), ("calibrate", "-o", str(tmp_path / "c.yaml"))):
        result = cli(args[0], "--arch", "h100-sxm", "--measurements", str(path), *args[1:])
        assert result.code == 2 and result.err.count("\n") == 1
        assert f"{path}: record 'r': params.bytes: expected an integer, got 'lots'" in result.err


def test_a_config_value_the_simulator_refuses_names_the_records_config(tmp_path):
    """The families name every value ``params.NAME``; a record keeps its config apart."""
    path = _file(tmp_path, {**GOOD, "config": {"num_warps": 3}})
    refused = []
    assert compare(read_measurements([path]), refused=refused) == []
    assert refused[0].reason == f"{path}: record 'r': config.num_warps: expected one of: 1, 2, 4, 8, 16, 32; got 3"
