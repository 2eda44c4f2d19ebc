"""Each record's status on the config it is predicted with: fitted, held-out, derived (a
published value came from it) or never fitted; only never-fitted records make headline
numbers."""

from __future__ import annotations

import json

import pytest

from accelsim.errors import InputError
from accelsim.validate.calibrate import is_held_out
from accelsim.validate.compare import read_measurements
from accelsim.validate.fit_status import fit_record

HEADER = {"kind": "measurements", "schema_version": 1, "family": "elementwise", "device": {"arch": "h200-sxm"},
          "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None, "source": "test"}}
PARAMS = {"elements": 2**24, "dtype": "fp32", "inputs": 1, "outputs": 1}


def _write(path, records):
    path.write_text(json.dumps({**HEADER, "records": records}))
    return path


def _record(record_id, latency_s, source="github.com/a/b @1 x.txt", **extra):
    return {"id": record_id, "family": "elementwise", "params": PARAMS, "latency_s": latency_s, "source": source,
            **extra}


def _overlay(tmp_path, fitted_file, split=""):
    path = tmp_path / "fit.yaml"
    path.write_text(f"extends: h200-sxm\nname: fit\nhbm:\n  efficiency:\n    value: 0.8\n    basis: fitted\n"
                    f"    source: accelsim calibrate on 3 training records ({fitted_file}); 1 held out{split}; today\n")
    return str(path)


def test_records_of_a_fitted_file_follow_the_split_and_others_were_never_fitted(tmp_path):
    ids = [f"r{i}" for i in range(12)]
    fitted = _write(tmp_path / "fitted.json", [_record(i, 1e-4 * (n + 1)) for n, i in enumerate(ids)])
    other = _write(tmp_path / "other.json", [_record("q", 3e-3)])
    status = fit_record(_overlay(tmp_path, fitted)).status
    assert {m.id: status(m) for m in read_measurements([fitted])} == {
        i: "held-out" if is_held_out(i) else "fitted" for i in ids}
    assert [status(m) for m in read_measurements([other])] == ["never fitted"]
    assert fit_record("h200-sxm").files == frozenset()  # a published config: nothing fitted


def test_the_same_measurement_in_another_file_counts_as_fitted(tmp_path):
    """Same source, family, parameters and latency: the public STREAM rows at full occupancy
    are rows of the occupancy sweep a fit used."""
    trained = next(f"r{i}" for i in range(20) if not is_held_out(f"r{i}"))
    fitted = _write(tmp_path / "sweep.json", [_record(trained, 2e-4, source="github.com/a/b @1 x.txt")])
    twin = _write(tmp_path / "ref.json", [_record("same", 2e-4, source="github.com/a/b @2 y.txt"),
                                          _record("slower", 3e-4, source="github.com/a/b @2 y.txt"),
                                          _record("elsewhere", 2e-4, source="github.com/c/d")])
    status = fit_record(_overlay(tmp_path, fitted)).status
    assert {m.id: status(m) for m in read_measurements([twin])} == {
        "same": "fitted", "slower": "never fitted", "elsewhere": "never fitted"}


def test_a_record_a_published_value_came_from_is_derived(tmp_path):
    path = _write(tmp_path / "m.json", [_record("init", 1e-4, informs=["hbm.efficiency"])])
    (m,) = read_measurements([path])
    assert m.informs == ("hbm.efficiency",)
    assert fit_record("h200-sxm").status(m) == "derived"


def test_split_by_kernel_is_read_from_the_fitted_source(tmp_path):
    fitted = _write(tmp_path / "fitted.json", [_record("r1", 1e-4)])
    assert fit_record(_overlay(tmp_path, fitted, " (--split-by kernel)")).split == "kernel"


@pytest.mark.parametrize("informs", ["hbm.efficiency", [1], ["Bad Path"]])
def test_a_bad_informs_is_one_line_naming_the_record(tmp_path, informs):
    path = _write(tmp_path / "m.json", [_record("init", 1e-4, informs=informs)])
    with pytest.raises(InputError) as caught:
        read_measurements([path])
    assert "records[0].informs: expected a list of config paths" in caught.value.one_line()
