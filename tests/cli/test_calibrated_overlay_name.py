"""A calibrated overlay is named as its file is (``-o my-h100.yaml`` makes ``my-h100``),
so ``--arch my-h100`` reports the config it ran; validate and calibrate know it for a
calibration of the config it extends by what it holds (fitted values, uncertainty bands),
not by a ``-calibrated`` suffix."""

import json

import yaml

from accelsim.arch.loader import is_calibration, measured_config

REFERENCE = "validation/reference/a100-sxm4-80gb/layernorm.json"


def test_the_overlay_takes_its_files_name_and_is_validated_against_its_chip(cli, tmp_path):
    overlay = tmp_path / "my-a100.yaml"
    fit = cli("calibrate", "--arch", "a100-sxm4-80gb", "--measurements", REFERENCE, "--bands-only", "-o", str(overlay))
    assert fit.code == 0, fit.err
    assert yaml.safe_load(overlay.read_text())["name"] == "my-a100"
    ran = json.loads(cli("simulate", "--arch", str(overlay), "--kernel", "layernorm", "--param", "rows=4096",
                         "--param", "cols=4096", "--json").out)
    assert ran["arch"] == "my-a100"
    assert measured_config(str(overlay)) == "a100-sxm4-80gb"
    report = cli("validate", "--arch", str(overlay), "--measurements", REFERENCE, "-o", str(tmp_path / "report"))
    assert report.code == 0, report.err
    again = cli("calibrate", "--arch", str(overlay), "--measurements", REFERENCE, "--bands-only",
                "-o", str(tmp_path / "again.yaml"))
    assert again.code == 2 and "'my-a100' is a calibrated overlay" in again.err and "'a100-sxm4-80gb'" in again.err


def test_an_overlay_named_as_the_config_it_extends_is_refused(cli, tmp_path):
    result = cli("calibrate", "--arch", "a100-sxm4-80gb", "--measurements", REFERENCE, "--bands-only",
                 "-o", str(tmp_path / "a100-sxm4-80gb.yaml"))
    assert result.code == 2 and "-o:" in result.err and "as the config it extends" in result.err
    assert not (tmp_path / "a100-sxm4-80gb.yaml").exists()


def test_every_committed_config_is_told_apart_by_what_it_holds():
    """The calibrated/ folder's overlays are calibrations; no published config is one."""
    from accelsim.arch.loader import builtin_paths, read_yaml

    configs = builtin_paths()
    assert len(configs) > 30
    for path in configs:
        calibration = path.parent.name == "calibrated"
        assert is_calibration(read_yaml(path)[0]) is calibration, path
        assert (measured_config(str(path)) != path.stem) is calibration, path


def test_odd_overlay_file_names_are_refused(cli, tmp_path):
    for name, says in ((".yaml", "expected NAME.yaml"), ("x.yml", "expected NAME.yaml"), ("x", "expected NAME.yaml"),
                       ("dgx-h200-published.yaml", "'dgx-h200-published' is a published config's name"),
                       ("h100-sxm.yaml", "'h100-sxm' is a published config's name")):
        out = tmp_path / name
        result = cli("calibrate", "--arch", "a100-sxm4-80gb", "--measurements", REFERENCE, "--bands-only", "-o", str(out))
        assert result.code == 2 and says in result.err and result.err.count("\n") == 1, (name, result.err)
        assert not out.exists()
    upper = tmp_path / "Mine.YAML"
    assert cli("calibrate", "--arch", "a100-sxm4-80gb", "--measurements", REFERENCE, "--bands-only",
               "-o", str(upper)).code == 0
    assert yaml.safe_load(upper.read_text())["name"] == "Mine"


def test_an_overlay_with_nothing_fitted_is_not_written(tmp_path):
    """It would be the published config under another name, and not a calibration."""
    import pytest

    from accelsim.cli.calibrate_cmd import write_overlay
    from accelsim.errors import InputError

    out = tmp_path / "nothing.yaml"
    empty = {"schema_version": 1, "kind": "node", "extends": "dgx-h100-published", "name": "nothing", "collectives": {}}
    with pytest.raises(InputError, match="the fit moved nothing"):
        write_overlay(out, "# header\n", empty)
    assert not out.exists()
    empty["collectives"] = {"nvls_latency": {"value": "80 us", "basis": "fitted", "source": "a fit"}}
    write_overlay(out, "# header\n", empty)
    assert measured_config(str(out)) == "dgx-h100-published"
