"""Every kind of bad config input gives one located line and exit code 2."""

from __future__ import annotations

import copy

import pytest
import yaml

from accelsim.arch.loader import builtin_dir


@pytest.fixture
def h100() -> dict:
    return yaml.safe_load((builtin_dir() / "gpu" / "h100-sxm.yaml").read_text())


@pytest.fixture
def config_file(tmp_path, h100):
    """Write a modified copy of the H100 config; returns its path."""

    def write(mutate, name="bad-chip.yaml"):
        data = copy.deepcopy(h100)
        data["name"] = name.removesuffix(".yaml")
        mutate(data)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.code == 2, result
    assert result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_unknown_field(cli, config_file):
    path = config_file(lambda d: d["hbm"].update(bandwith="1 TB/s"))
    result = cli("arch", "show", str(path))
    assert_one_line_error(result, str(path), "hbm.bandwith", "unknown field", "bandwidth")


def test_unknown_field_reports_its_line(cli, config_file):
    path = config_file(lambda d: d["hbm"].update(bandwith="1 TB/s"))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "bandwith" in text)
    assert_one_line_error(cli("arch", "show", str(path)), f"{path}:{line}:")


def test_missing_field(cli, config_file):
    path = config_file(lambda d: d["hbm"].pop("capacity"))
    assert_one_line_error(cli("arch", "show", str(path)), str(path), "hbm.capacity", "missing required field")


def test_missing_unit(cli, config_file):
    path = config_file(lambda d: d["hbm"]["bandwidth"].update(value=3.35))
    assert_one_line_error(cli("arch", "show", str(path)), "hbm.bandwidth", "no unit", "TB/s")


def test_wrong_unit(cli, config_file):
    path = config_file(lambda d: d["hbm"]["bandwidth"].update(value="3.35 GHz"))
    assert_one_line_error(cli("arch", "show", str(path)), "hbm.bandwidth", "frequency", "expected a bandwidth")


@pytest.mark.parametrize("value", ["0 TB/s", "-3 TB/s", "1e-20 B/s"])
def test_zero_negative_or_tiny_bandwidth(cli, config_file, value):
    path = config_file(lambda d: d["hbm"].update(bandwidth=value))
    assert_one_line_error(cli("arch", "show", str(path)), "hbm.bandwidth", "at least 1 B/s")


@pytest.mark.parametrize("value", ["0 GHz", "0.001 Hz"])
def test_a_clock_under_one_hertz(cli, config_file, value):
    path = config_file(lambda d: d.update(clock=value))
    assert_one_line_error(cli("arch", "show", str(path)), "clock", "at least 1 Hz")


def test_unknown_extends(cli, write_yaml):
    path = write_yaml("derived.yaml", "extends: h100-nonexistent\nname: derived\n")
    assert_one_line_error(cli("arch", "show", str(path)), str(path), "extends", "unknown config 'h100-nonexistent'")


def test_extends_cycle(cli, write_yaml):
    write_yaml("a.yaml", "extends: b.yaml\nname: a\n")
    path_b = write_yaml("b.yaml", "extends: a.yaml\nname: b\n")
    result = cli("arch", "show", str(path_b))
    assert_one_line_error(result, "extends", "cycle", "b.yaml -> a.yaml -> b.yaml")


def test_yaml_syntax_error_names_line(cli, write_yaml):
    path = write_yaml("broken.yaml", "name: broken\nhbm:\n  bandwidth: [3.35 TB/s\n")
    result = cli("arch", "show", str(path))
    assert_one_line_error(result, str(path), "YAML syntax error")
    assert f"{path}:" in result.err


def test_unsafe_yaml_tag_is_refused(cli, write_yaml):
    path = write_yaml("evil.yaml", "name: !!python/object/apply:os.system ['echo hacked']\n")
    assert_one_line_error(cli("arch", "show", str(path)), str(path), "YAML")


@pytest.mark.parametrize(
    "override, fragments",
    [
        ("hbm.bandwdth=8 TB/s", ("--set", "hbm.bandwdth", "unknown field", "bandwidth")),
        ("nosuch.field=1", ("--set", "nosuch.field", "unknown field")),
        ("hbm=8 TB/s", ("--set", "'hbm' is a section", "bandwidth")),
        ("hbm.bandwidth=8", ("--set", "hbm.bandwidth", "no unit")),
        ("hbm.bandwidth", ("--set", "PATH=VALUE")),
        ("matrix_unit.flops_per_cycle_per_core.bf17=1", ("--set", "unknown key 'bf17'", "bf16")),
    ],
)
def test_bad_set(cli, override, fragments):
    assert_one_line_error(cli("arch", "show", "h100-sxm", "--set", override), *fragments)


def test_unknown_config_name(cli):
    assert_one_line_error(cli("arch", "show", "h900"), "unknown config 'h900'", "h100-sxm")


def test_missing_file(cli, tmp_path):
    assert_one_line_error(cli("arch", "show", str(tmp_path / "none.yaml")), "no such config file")


def test_bad_cli_argument(cli):
    assert_one_line_error(cli("arch", "shoe"), "invalid choice")


def test_top_level_not_a_mapping(cli, write_yaml):
    path = write_yaml("list.yaml", "- 1\n- 2\n")
    assert_one_line_error(cli("arch", "show", str(path)), str(path), "mapping")


def test_a_core_count_past_two_to_the_twenty(cli):
    result = cli("arch", "show", "h100-sxm", "--set", "cores.count=99999999999")
    assert result.code == 2 and result.err.count("\n") == 1 and "at most 1,048,576 (2^20) cores" in result.err


@pytest.mark.parametrize("text, fragments", [
    ("schema_version: 1\nkind: chip\nname: t\nextends: h100-sxm\ncores:\n  count: " + "9" * 5000 + "\n",
     ("cannot be read", "4300 digits")),
    ("schema_version: 1\nkind: chip\nname: t\nextends: tpu-v5e\ncores: 2\n", ("cores", "dictionary")),
    ("schema_version: 1\nkind: [0, 0]\nname: t\n", ("kind", "one of")),
    ("schema_version: true\nkind: chip\nname: t\nextends: h100-sxm\n", ("schema_version", "expected a number")),
    ("schema_version: 1\nkind: chip\nname: t\nextends: h100-sxm\nmatrix_unit:\n  flops_per_cycle_per_core:\n"
     "    value: {fp32: 2048, tf32: 2048, bf16: 1.0e+308, fp16: 4096, fp8: 8192, int8: 8192}\n",
     ("flops_per_cycle_per_core.bf16", "at most 1e+30")),
    ("schema_version: 1\nkind: node\nname: n\nextends: dgx-h100\ngpus: 16384\n", ("gpus", "at most 1024 GPUs")),
    ("schema_version: 1\nkind: chip\nname: \"t\\e[2J\"\nextends: h100-sxm\n", ("name", "printable")),
])
def test_values_no_config_can_hold(cli, write_yaml, text, fragments):
    """Past Python's integer limit, of the wrong type, past any finite peak or memory: one line each."""
    path = write_yaml("odd.yaml", text)
    assert_one_line_error(cli("arch", "show", str(path)), str(path), *fragments)


def test_a_set_value_past_the_integer_limit(cli):
    assert_one_line_error(cli("arch", "show", "h100-sxm", "--set", "cores.count=" + "9" * 5000),
                          "--set", "cores.count", "4300 digits")
