"""A record's ``cache_flush`` (what its timing tool did to the L2 before each timed call)
sets the L2's state at the kernel's start: a buffer written leaves that many dirty bytes, one
read leaves it clean; the command's ``--set`` and the record's conditions say it first. A
malformed one is refused with the record's file and field."""

from __future__ import annotations

import json

import pytest

from accelsim.errors import InputError
from accelsim.validate.compare import compare, read_measurements

HEADER = {"kind": "measurements", "schema_version": 1, "family": "layernorm", "device": {"arch": "h100-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}
DO_BENCH = {"bytes": 256_000_000, "access": "write"}


def _write(tmp_path, *records):
    path = tmp_path / "m.json"
    base = {"family": "layernorm", "params": {"rows": 4096, "cols": 1024, "dtype": "fp32"}, "latency_s": 20e-6}
    path.write_text(json.dumps({**HEADER, "records": [{**base, **r} for r in records]}))
    return path


def test_a_write_flush_leaves_its_bytes_dirty_and_slows_the_prediction(tmp_path):
    plain, flushed, read = read_measurements([_write(
        tmp_path, {"id": "a"}, {"id": "b", "cache_flush": DO_BENCH},
        {"id": "c", "cache_flush": {"bytes": 1e9, "access": "read"}})])
    assert plain.overrides_on(()) == ()
    assert flushed.overrides_on(()) == ("shared_cache.dirty_at_start=256000000 B",)
    assert read.overrides_on(()) == ("shared_cache.dirty_at_start=0 B",)
    steady, dirty, clean = compare([plain, flushed, read])
    assert clean.predicted_s < steady.predicted_s < dirty.predicted_s


def test_the_command_and_the_conditions_say_it_first(tmp_path):
    (m,) = read_measurements([_write(tmp_path, {"id": "a", "cache_flush": DO_BENCH})])
    given = ("shared_cache.dirty_at_start = 0 B",)
    assert m.overrides_on(given) == given
    (conditioned,) = read_measurements([_write(
        tmp_path, {"id": "a", "cache_flush": DO_BENCH, "conditions": {"shared_cache.dirty_at_start": "1 MB"}})])
    assert conditioned.overrides_on(()) == ("shared_cache.dirty_at_start=1 MB",)


@pytest.mark.parametrize("flush", [{"bytes": 256e6}, {"bytes": 0, "access": "write"},
                                   {"bytes": 256e6, "access": "memset"}, "256 MB", {"bytes": True, "access": "read"}])
def test_a_malformed_flush_is_refused(tmp_path, flush):
    path = _write(tmp_path, {"id": "a", "cache_flush": flush})
    with pytest.raises(InputError, match=r"records\[0\]\.cache_flush"):
        read_measurements([path])
