"""Overrides applied to the validated spec object (``with_values``): the same config as
the YAML path gives (``--set`` on the file's mappings), every section on the way checked
again, errors located by field path and naming no source (the caller says where the
values came from), and numbers in base units where code computes them."""

import pytest

from accelsim.arch.loader import Override, OverrideError, load_raw, parse_override, validate, with_values
from accelsim.arch.model import load_arch, resolve
from accelsim.arch.schema import InBaseUnit
from accelsim.errors import InputError


@pytest.fixture(scope="module")
def h100():
    raw = load_raw("h100-sxm")
    return raw, validate(raw)


def test_the_tpu_port_derived_from_hbm_follows_it():
    spec = validate(load_raw("tpu-v5e"))
    doubled = with_values(spec, [parse_override("hbm.bandwidth=1638 GB/s")])
    assert doubled.local_memory.fill_bandwidth_bytes_per_cycle.value == pytest.approx(
        2 * spec.local_memory.fill_bandwidth_bytes_per_cycle.value)


@pytest.mark.parametrize("texts, overlay", [
    (["hbm.efficiency=0.8", "launch_overhead=5.5 us", "clock=1500 MHz"],
     "hbm: {efficiency: 0.8}\nlaunch_overhead: 5.5 us\nclock: 1500 MHz\n"),
    (["cores.program_overhead=0.1 us", "hbm.queueing_latency=300 ns", "cores.count=66"],
     "cores: {program_overhead: 0.1 us, count: 66}\nhbm: {queueing_latency: 300 ns}\n"),
    (["matrix_unit.efficiency=0.5", "matrix_unit.efficiency=0.6"], "matrix_unit: {efficiency: 0.6}\n"),
])
def test_the_same_chip_as_an_overlay_file(h100, write_yaml, texts, overlay):
    _, spec = h100
    path = write_yaml("what-if.yaml", f"extends: h100-sxm\nname: h100-sxm\n{overlay}")
    assert resolve(with_values(spec, [parse_override(t) for t in texts])) == load_arch(str(path))


def test_a_cited_field_set_whole_carries_the_overrides_citation(h100):
    _, spec = h100
    changed = with_values(spec, [Override(("hbm", "bandwidth"), "8 TB/s", "what-if")])
    assert changed.hbm.bandwidth.value == 8e12 and changed.hbm.bandwidth.basis == "override"
    assert changed.hbm.bandwidth.source == "what-if" and changed.hbm.capacity == spec.hbm.capacity


def test_a_quantity_computed_in_base_units(h100):
    _, spec = h100
    changed = with_values(spec, [Override(("launch_overhead",), InBaseUnit(3e-6), "fit")])
    assert resolve(changed).launch_overhead_s == 3e-6
    with pytest.raises(InputError, match="got the bare number 3e-06 \\(no unit\\)"):
        with_values(spec, [Override(("launch_overhead",), 3e-6, "fit")])


@pytest.mark.parametrize("text, field, message", [
    ("hbm.efficiency=2", "hbm.efficiency", "must be a fraction from 0.001 to 1, got 2.0"),
    ("hbm.foo=1", "hbm.foo", "unknown field 'foo'; expected one of: name, capacity"),
    ("clock=[1, 2]", "clock", "expected a frequency with a unit"),
    ("hbm=3", "hbm", "'hbm' is a section; set one of its fields"),
    ("vector_unit.flops_per_cycle_per_core.fp32=0", "vector_unit.flops_per_cycle_per_core.fp32",
     "must be greater than zero, got 0.0"),  # below a cited field: found by fuzzing (a raw ValidationError)
])
def test_errors_carry_the_field_path_and_no_source(h100, text, field, message):
    _, spec = h100
    with pytest.raises(InputError) as exc:
        with_values(spec, [parse_override(text)])
    assert exc.value.source is None and exc.value.field == field and message in exc.value.message
    assert "--set" not in exc.value.one_line()


def test_the_spec_given_is_left_as_it_was(h100):
    _, spec = h100
    before = spec.model_dump()
    with_values(spec, [parse_override("hbm.efficiency=0.5"), parse_override("clock=1 GHz")])
    assert spec.model_dump() == before


def test_only_the_cli_names_the_flag(cli):
    with pytest.raises(OverrideError) as exc:
        load_arch("dgx-h100", ["chip.hbm.efficiency=2"])
    assert exc.value.source is None and exc.value.field == "chip.hbm.efficiency"
    result = cli("arch", "show", "dgx-h100", "--set", "chip.hbm.efficiency=2")
    assert result.err == "accelsim: error: --set: chip.hbm.efficiency: must be a fraction from 0.001 to 1, got 2.0\n"


def test_a_sections_own_check_names_the_overrides_it_follows(h100):
    _, spec = h100
    with pytest.raises(OverrideError) as exc:
        with_values(spec, [parse_override("local_memory.max_per_program=1 TiB")])
    assert exc.value.field == "local_memory"
    assert exc.value.message.endswith("exceeds capacity (233472 B) (after local_memory.max_per_program)")
