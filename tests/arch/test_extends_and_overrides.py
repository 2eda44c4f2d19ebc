"""``extends`` merges onto a base config; ``--set`` overrides are validated like the file."""

from accelsim.arch.model import load_arch, load_arch_and_spec


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
    write_yaml("base.yaml", "extends: h100-sxm\nname: base\nclock: 1.5 GHz\n")
    path = write_yaml("child.yaml", "extends: base.yaml\nname: child\n")
    assert load_arch(str(path)).clock_hz == 1.5e9


def test_set_override_records_its_origin():
    arch, spec = load_arch_and_spec("h100-sxm", ["hbm.bandwidth=8 TB/s"])
    assert arch.hbm.bandwidth_bytes_per_s == 8e12
    assert spec.hbm.bandwidth.basis == "override"
    assert "--set" in spec.hbm.bandwidth.source


def test_set_scales_derived_peaks():
    base = load_arch("h100-sxm")
    faster = load_arch("h100-sxm", ["clock=3.66 GHz", "cores.count=264"])
    assert faster.matrix_flops_per_s("bf16") == 4 * base.matrix_flops_per_s("bf16")


def test_set_on_a_dtype_entry():
    arch = load_arch("h100-sxm", ["matrix_unit.flops_per_cycle_per_core.bf16=8192"])
    assert arch.matrix.flops_per_cycle_per_core["bf16"] == 8192
    assert arch.matrix.flops_per_cycle_per_core["fp16"] == 4096


def test_set_a_list():
    assert load_arch("h100-sxm", ["matrix_unit.shape=[128, 128]"]).matrix.shape == (128, 128)


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
    assert result.code == 2 and "chip: missing required field (after --set kind)" in result.err


def test_per_program_local_memory_above_capacity_is_refused(cli):
    result = cli("arch", "show", "h100-sxm", "--set", "local_memory.max_per_program=1 TiB")
    assert result.code == 2 and "max_per_program" in result.err and "exceeds capacity" in result.err
    assert "(after --set local_memory.max_per_program)" in result.err


def test_calibrating_an_overlay_is_refused(cli):
    result = cli("calibrate", "--arch", "a100-sxm4-80gb-calibrated", "--measurements", "validation/reference",
                 "--fit", "hbm.efficiency", "-o", "never.yaml")
    assert result.code == 2 and "calibrate the published config it extends ('a100-sxm4-80gb')" in result.err


def test_a_bad_set_reaching_a_systems_chip_keeps_the_path_as_written(cli):
    result = cli("arch", "show", "dgx-h100", "--set", "chip.hbm.bandwidth=-1 TB/s")
    assert result.code == 2 and "--set: chip.hbm.bandwidth: must be at least 1 B/s" in result.err
