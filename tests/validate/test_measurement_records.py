"""A measurement record whose latency is not a positive number of seconds, or whose
params are not an object, is refused by file and field before any simulation."""

import json

import pytest

from accelsim.errors import InputError
from accelsim.validate.compare import read_measurements


def _file(tmp_path, record: dict):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"kind": "measurements", "schema_version": 1, "device": {"arch": "h100-sxm"},
                                "records": [record]}))
    return path


GOOD = {"id": "r", "family": "copy", "params": {"bytes": 1024}, "latency_s": 2e-6}


@pytest.mark.parametrize("change, field", [
    ({"latency_s": 0}, "records[0].latency_s"),
    ({"latency_s": -1e-6}, "records[0].latency_s"),
    ({"latency_s": "fast"}, "records[0].latency_s"),
    ({"latency_s": True}, "records[0].latency_s"),
    ({"latency_s": None}, "records[0].latency_s"),
    ({"params": [1024]}, "records[0].params"),
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
    path.write_text(json.dumps({"kind": "measurements", "schema_version": 1, "device": {"arch": "h100-sxm"},
                                "records": [GOOD, GOOD]}))
    with pytest.raises(InputError, match="duplicate record id 'r'"):
        read_measurements([path])
