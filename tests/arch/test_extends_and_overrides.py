"""``extends`` merges onto a base config; ``--set`` overrides are validated like the file."""

import re

import pytest

from accelsim.arch.model import load_arch, load_arch_and_spec
from accelsim.errors import InputError


def test_extends_changes_only_what_it_says(write_yaml):
    path = write_yaml(
        "fast-hbm.yaml",
        """
        extends: h100-sxm
        name: fast-hbm
        display_name: H100 with faster HBM
        hbm:
          bandwidth: {value: 6 TB/s, basis: estimate, note: what-if}
        """,
    )
    base, derived = load_arch("h100-sxm"), load_arch(str(path))
    assert derived.hbm.bandwidth_bytes_per_s == 6e12
    assert derived.hbm.capacity_bytes == base.hbm.capacity_bytes
    assert derived.num_cores == base.num_cores
    assert derived.name == "fast-hbm"


def test_extends_a_relative_path(write_yaml):
    # the boost off: with it on kernels run at power.dvfs.boost.clock, not `clock`
    write_yaml("base.yaml", "extends: h100-sxm\nname: base\nclock: 1.5 GHz\n"
               "power:\n  dvfs:\n    boost:\n      enabled: false\n")
    path = write_yaml("child.yaml", "extends: base.yaml\nname: child\n")
    assert load_arch(str(path)).clock_hz == 1.5e9


def test_set_override_records_its_origin():
    arch, spec = load_arch_and_spec("h100-sxm", ["hbm.bandwidth=8 TB/s"])
    assert arch.hbm.bandwidth_bytes_per_s == 8e12
    assert spec.hbm.bandwidth.basis == "override"
    assert "--set" in spec.hbm.bandwidth.source


def test_set_scales_derived_peaks():
    base = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])  # a clock --set needs the boost off
    faster = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false", "clock=3.66 GHz", "cores.count=264"])
    assert faster.matrix_flops_per_s("bf16") == 4 * base.matrix_flops_per_s("bf16")


def test_set_on_a_dtype_entry():
    arch = load_arch("h100-sxm", ["matrix_unit.flops_per_cycle_per_core.bf16=8192"])
    assert arch.matrix.flops_per_cycle_per_core["bf16"] == 8192
    assert arch.matrix.flops_per_cycle_per_core["fp16"] == 4096


def test_set_a_list():
    given_peak = "matrix_unit.flops_per_cycle_per_core.bf16=4096"  # a GPU's shape alone is refused (test_matrix_peak)
    assert load_arch("h100-sxm", ["matrix_unit.shape=[128, 64, 32]", given_peak]).matrix.shape == (128, 64, 32)
    assert load_arch("tpu-v5e", ["matrix_unit.shape=[256, 256]"]).matrix.shape == (256, 256)


@pytest.mark.parametrize("chip, shape, expected", [
    ("h100-sxm", "[128, 128]", "expected 3 entries [m, n, k] (the MMA granule) on a GPU"),
    ("h100-sxm", "[64, 8, 16, 4]", "expected 3 entries"),
    ("tpu-v5e", "[256]", "expected 2 entries [rows, cols] (the MXU) on a TPU"),
])
def test_a_matrix_unit_shape_of_the_wrong_length_is_refused(chip, shape, expected):
    """It crashed a GEMM with a traceback (or was silently cut short)."""
    with pytest.raises(InputError, match=re.escape(expected)):
        load_arch(chip, [f"matrix_unit.shape={shape}"])


def test_protocol_fields_and_uncertainty_bands_can_be_set():
    """Mapping entries with fixed keys (the NCCL protocols) and free keys (families) were
    refused as 'not a section'."""
    node = load_arch("dgx-h100", ["collectives.protocols.ll.base_latency=1 us"])
    assert node.collectives.protocols["ll"].base_latency_s == pytest.approx(1e-6)
    chip = load_arch("h100-sxm-calibrated", ["uncertainty.gemm.p05=-0.1"])
    assert chip.uncertainty["gemm"][0] == pytest.approx(-0.1)


def test_an_override_of_an_optional_cited_field_is_recorded_as_an_override():
    from accelsim.arch.loader import load_spec

    spec, _ = load_spec("h100-sxm", ["matrix_unit.chained_efficiency=0.5"])
    assert spec.matrix_unit.chained_efficiency.basis == "override"
    assert "--set matrix_unit.chained_efficiency=0.5" in spec.matrix_unit.chained_efficiency.source


def test_an_error_inside_an_overridden_value_names_the_override(cli):
    result = cli("arch", "show", "tpu-v5e-16x16", "--set", "shape=[0,16]")
    assert result.code == 2 and result.err.startswith("accelsim: error: --set: shape[0]: must be greater than zero")


def test_a_bare_number_in_a_file_is_shown_as_given_not_as_a_spec(write_yaml):
    from accelsim.arch.model import load_arch_and_spec

    path = write_yaml("mine.yaml", """\
        schema_version: 1
        kind: chip
        extends: h100-sxm
        name: mine
        hbm: {bandwidth: 1 TB/s}
        """)
    _, spec = load_arch_and_spec(str(path))
    assert spec.hbm.bandwidth.basis == "given" and spec.hbm.bandwidth.source is None


def test_an_error_an_override_causes_elsewhere_says_so(cli):
    result = cli("arch", "show", "h100-sxm", "--set", "kind=torus")
    assert result.code == 2 and "--set: kind: Input should be 'chip' (got 'torus')" in result.err


def test_per_program_local_memory_above_capacity_is_refused(cli):
    result = cli("arch", "show", "h100-sxm", "--set", "local_memory.max_per_program=1 TiB")
    assert result.code == 2 and "max_per_program" in result.err and "exceeds capacity" in result.err
    assert result.err.startswith("accelsim: error: --set: local_memory: ")
    assert "(after local_memory.max_per_program)" in result.err


def test_calibrating_an_overlay_is_refused(cli):
    result = cli("calibrate", "--arch", "a100-sxm4-40gb-calibrated", "--measurements", "validation/reference",
                 "--fit", "hbm.efficiency", "-o", "never.yaml")
    assert result.code == 2 and "calibrate the published config it extends ('a100-sxm4-40gb')" in result.err


def test_a_bad_set_reaching_a_systems_chip_keeps_the_path_as_written(cli):
    result = cli("arch", "show", "dgx-h100", "--set", "chip.hbm.bandwidth=-1 TB/s")
    assert result.code == 2 and "--set: chip.hbm.bandwidth: must be at least 1 B/s" in result.err


def test_a_boolean_is_not_a_number():
    with pytest.raises(InputError, match="expected a number, got True"):
        load_arch("h100-sxm", ["matrix_unit.efficiency=true"])


def test_a_system_forwards_a_chip_override_written_with_a_leading_space():
    spaced = load_arch("dgx-h100", [" chip.hbm.bandwidth=8 TB/s"])
    assert spaced.chip.hbm.bandwidth_bytes_per_s == pytest.approx(8e12)


def test_a_tpu_dma_port_follows_an_hbm_what_if():
    """The port was a number derived from the published HBM bandwidth: doubling HBM left it
    in place, and a bandwidth-bound kernel moved 9% instead of about 2x."""
    base = load_arch("tpu-v5e").local.fill_bandwidth_bytes_per_cycle
    assert base == pytest.approx(819e9 / 1.5e9)
    assert load_arch("tpu-v5e", ["hbm.bandwidth=1638 GB/s"]).local.fill_bandwidth_bytes_per_cycle == pytest.approx(2 * base)
    assert load_arch("tpu7x").local.fill_bandwidth_bytes_per_cycle == pytest.approx(7380e9 / 2.2e9 / 2)  # 2 devices
    pinned = load_arch("tpu-v5e", ["hbm.bandwidth=1638 GB/s", "local_memory.fill_bandwidth_bytes_per_cycle=546"])
    assert pinned.local.fill_bandwidth_bytes_per_cycle == 546


def test_a_field_of_a_section_the_chip_lacks_says_so():
    """It said 'shared_cache.name: missing required field'."""
    with pytest.raises(InputError, match="'tpu-v5e' has no 'shared_cache' section"):
        load_arch("tpu-v5e", ["shared_cache.capacity=128 MiB"])


@pytest.mark.parametrize("given", ["source: my own measurement", "basis: estimate"])
def test_a_citation_without_its_value_is_refused(write_yaml, given):
    """Merged, the parent's number would be shown with this file's source: one line naming
    the file, its line and the field."""
    path = write_yaml("child.yaml", f"extends: h100-sxm\nname: child\nhbm:\n  bandwidth:\n    {given}\n")
    with pytest.raises(InputError, match=r"hbm\.bandwidth: gives a (source|basis) but no value") as exc:
        load_arch(str(path))
    assert exc.value.line == 4


def test_a_chain_of_overlays_too_long_names_a_file(write_yaml):
    for i in range(70):
        write_yaml(f"c{i}.yaml", f"extends: c{i + 1}.yaml\n")
    write_yaml("c70.yaml", "extends: h100-sxm\n")
    with pytest.raises(InputError) as exc:
        load_arch(str(write_yaml("top.yaml", "extends: c0.yaml\n")))
    assert exc.value.source.endswith("c62.yaml") and exc.value.field == "extends"
    assert "'extends' chains more than 64 files (from top.yaml)" in exc.value.message
