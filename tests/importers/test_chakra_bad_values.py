"""Chakra values that used to crash the importer: an attribute whose ``name`` is a list
or an object (unhashable), and integers past 64 bits (a 300-digit ``duration_micros``
overflowed a float)."""

import json

import pytest

from accelsim.errors import InputError
from accelsim.importers.chakra import import_chakra


def _rank(tmp_path, node: dict):
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"nodes": [{"id": 1, "name": "k", "type": "COMP_NODE", **node}]}))
    return path


@pytest.mark.parametrize("name", [["stream"], {"stream": 1}, 7, None])
def test_an_attribute_name_that_is_not_text(tmp_path, name):
    with pytest.raises(InputError) as exc:
        import_chakra([_rank(tmp_path, {"duration_micros": 5, "attr": [{"name": name, "int64_val": 1}]})])
    assert exc.value.field == "node 1.attr[0].name"
    assert "expected the attribute's name (a string)" in exc.value.message


@pytest.mark.parametrize("node, field", [
    ({"duration_micros": "9" * 300}, "node 1.duration_micros"),
    ({"duration_micros": "9" * 5000}, "node 1.duration_micros"),
    ({"attr": [{"name": "num_ops", "uint64_val": str(2**64)}]}, "node 1.attr.num_ops"),
    ({"duration_micros": 5, "attr": [{"name": "stream", "int64_val": str(-2**64)}]}, "node 1.attr.stream"),
])
def test_an_integer_past_64_bits(tmp_path, node, field):
    with pytest.raises(InputError) as exc:
        import_chakra([_rank(tmp_path, node)])
    assert exc.value.field == field and "expected a 64-bit integer" in exc.value.message
    assert len(exc.value.one_line()) <= 300


def test_the_largest_64_bit_duration_imports(tmp_path):
    trace = import_chakra([_rank(tmp_path, {"duration_micros": str(2**64 - 1)})])
    assert trace.programs[0].ops[0].duration_s == (2**64 - 1) / 1e6
