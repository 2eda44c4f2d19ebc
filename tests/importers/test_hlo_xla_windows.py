"""XLA:TPU's tiling of each op kept beside its estimate: the windows of its
``window_config.iteration_bounds`` (the op runs as a pipelined loop over them), so the
comparison can say what XLA charges a window whatever its bytes."""

import gzip
import math
import re
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.importers.hlo import import_hlo, xla_windows
from accelsim.importers.hlo_estimates import compare_with_xla
from accelsim.system.replay import chip_of

V5E = Path(__file__).parent / "fixtures" / "tpu_v5e_4x4_train_step.hlo.txt.gz"


@pytest.mark.parametrize(("config", "windows"), [
    ('{"window_config":{"output_window_bounds":["2","64"],"iteration_bounds":["448","1"]}}', 448),
    ('{"window_config":{"iteration_bounds":[4, 32, 2]}}', 256),
    ('{"estimated_cycles":"2122"}', None),
    ('{"window_config":{"iteration_bounds":[]}}', None),
    ('{"window_config":{"iteration_bounds":["0"]}}', None),
    ('{"window_config":{"iteration_bounds":["-2"]}}', None),
    pytest.param('{"window_config":{"iteration_bounds":["' + "9" * 5000 + '"]}}', None, id="past int()'s 4300 digits"),
    pytest.param('{"window_config":{"iteration_bounds":[4294967296, 4294967296]}}', None, id="2^64: past an int64"),
])
def test_windows_are_the_product_of_the_iteration_bounds(config, windows):
    assert xla_windows(config) == windows


@pytest.fixture(scope="module")
def trace():
    return import_hlo(V5E, system="tpu-v5e-4x4")


def test_each_estimate_carries_the_windows_xla_wrote(trace):
    lines = {line.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%"): line
             for line in gzip.decompress(V5E.read_bytes()).decode().splitlines() if " = " in line}
    tiled = {name: entry for name, entry in trace.metadata["xla_estimates"].items() if "windows" in entry}
    assert tiled
    for name, entry in tiled.items():
        if "/" in name:  # in a loop: checked below against the folded import
            continue
        bounds = re.search(r'"iteration_bounds":\[([^\]]*)\]', lines[name]).group(1)
        assert entry["windows"] == math.prod(int(b.strip('"')) for b in bounds.split(","))


def test_a_folded_loop_scales_windows_as_it_scales_cycles(trace):
    folded = import_hlo(V5E, system="tpu-v5e-4x4", max_ops=60)
    assert folded.metadata["importer_counts"].get("folded_while_loops")
    per_window = {name.rsplit("/", 1)[-1]: e["cycles"] / e["windows"]
                  for name, e in trace.metadata["xla_estimates"].items() if "windows" in e}
    scaled = {name: e for name, e in folded.metadata["xla_estimates"].items() if "windows" in e and ".x" in name}
    assert scaled
    for name, entry in scaled.items():
        assert entry["cycles"] / entry["windows"] == pytest.approx(per_window[name.rsplit("/", 1)[-1]])


def test_a_kind_reports_xla_least_cycles_per_window(trace):
    xla = compare_with_xla(trace, chip_of(load_arch("tpu-v5e-4x4")))
    estimates = trace.metadata["xla_estimates"]
    for kind in xla.by_kind():
        ratios = [estimates[e.name]["cycles"] / estimates[e.name]["windows"]
                  for e in xla.ops if e.kind == kind.kind and "windows" in estimates[e.name]]
        assert kind.fewest_xla_cycles_per_window == (min(ratios) if ratios else None)
    assert any(kind.fewest_xla_cycles_per_window for kind in xla.by_kind())


@pytest.mark.parametrize("windows", [0, -3, 2.5, "many", True, pytest.param(10**400, id="10^400")])
def test_malformed_windows_are_one_line(trace, windows):
    name = next(iter(trace.metadata["xla_estimates"]))
    bad = trace.model_copy(update={"metadata": {"xla_estimates": {name: {"cycles": 10, "kind": "kLoop",
                                                                          "windows": windows}}}})
    with pytest.raises(InputError, match="expected a whole number of windows") as exc:
        compare_with_xla(bad, chip_of(load_arch("tpu-v5e-4x4")))
    assert exc.value.field.endswith(".windows")


def test_an_estimate_too_long_to_read_is_no_estimate():
    from accelsim.importers.hlo import _ESTIMATED_CYCLES

    assert _ESTIMATED_CYCLES.search('{"estimated_cycles":"' + "9" * 5000 + '"}') is None
    assert _ESTIMATED_CYCLES.search('{"estimated_cycles":"2122"}').group(1) == "2122"
