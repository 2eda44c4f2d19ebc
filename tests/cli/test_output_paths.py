"""Output paths are checked before the work: a missing folder, a folder given for a file,
a file given for a folder, an empty path or an unwritable place is one line, exit 2, and
nothing is left behind."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HLO = str(ROOT / "traces" / "system" / "transformer_step_dp2_tp4.hlo.txt")
TRACE = str(ROOT / "traces" / "system" / "transformer_step_dp2_tp4.json")
GEMM = ("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M=256", "--param", "N=256", "--param", "K=256")


def _commands(target: str) -> list[tuple[str, ...]]:
    return [
        ("import", "hlo", HLO, "--system", "dgx-h100", "-o", target),
        (*GEMM, "--timeline", target),
        ("replay", TRACE, "--system", "dgx-h100", "--timeline", target),
    ]


@pytest.mark.parametrize("kind", ["missing folder", "a folder", "empty", "unwritable"])
def test_a_bad_output_file_is_one_line_and_leaves_nothing(cli, tmp_path, kind):
    target = {"missing folder": str(tmp_path / "nope" / "x.json"), "a folder": str(tmp_path), "empty": "",
              "unwritable": "/proc/accelsim-test.json"}[kind]
    before = sorted(tmp_path.rglob("*"))
    for args in _commands(target):
        result = cli(*args)
        assert result.code == 2, (args, result.err)
        assert result.err.startswith("accelsim: error: ") and result.err.count("\n") == 1, result.err
        assert "Traceback" not in result.err
    assert sorted(tmp_path.rglob("*")) == before  # no temporary or partial file


def test_a_file_given_for_a_report_folder_is_refused(cli, tmp_path):
    existing = tmp_path / "report.md"
    existing.write_text("keep me")
    measurements = str(ROOT / "validation" / "reference" / "a100-sxm4-40gb")
    result = cli("validate", "--arch", "a100-sxm4-40gb", "--measurements", measurements, "-o", str(existing))
    assert result.code == 2 and "is a file; expected a folder" in result.err
    assert existing.read_text() == "keep me"


def test_a_symlink_is_written_through_and_kept(cli, tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert cli(*GEMM, "--timeline", str(link)).code == 0
    assert link.is_symlink() and target.read_text().startswith("{")


def test_a_device_is_written_into_not_replaced(cli):
    assert cli(*GEMM, "--timeline", "/dev/null").code == 0
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize("args", [
    ("validate", "--arch", "a100-sxm4-40gb", "--measurements", "no-such-file.json"),
    ("explore", "--arch", "h100", "--kernel", "gemm", "--param", "M=64", "--param", "N=64", "--param", "K=64",
     "--param", "block_m=64"),
])
def test_a_run_refused_on_its_inputs_leaves_no_empty_folder(cli, tmp_path, args):
    out = tmp_path / "out"
    result = cli(*args, "-o", str(out))
    assert result.code == 2 and not out.exists()


@pytest.mark.parametrize("args", [
    (*GEMM, "--timeline", ""),
    ("explore", "--arch", "h100", "--kernel", "gemm", "--param", "M=64", "--param", "N=64", "--param", "K=64", "-o", ""),
])
def test_an_empty_output_path_is_refused_not_ignored(cli, args):
    result = cli(*args)
    assert result.code == 2 and "empty" in result.err


def test_an_output_that_is_also_an_input_is_refused_and_the_input_kept(cli, tmp_path):
    import shutil

    kernel = tmp_path / "kernel.json"
    shutil.copy(ROOT / "traces" / "triton" / "matmul_512.json", kernel)
    system = tmp_path / "step.json"
    shutil.copy(TRACE, system)
    hlo = tmp_path / "step.hlo"
    shutil.copy(HLO, hlo)
    ranks = [tmp_path / name for name in ("rank0.json", "rank1.json")]
    for rank in ranks:
        shutil.copy(ROOT / "tests" / "importers" / "chakra_fixture" / rank.name, rank)
    (tmp_path / "m").mkdir()
    measurements = tmp_path / "m" / "stream.json"
    shutil.copy(ROOT / "validation" / "reference" / "a100-sxm4-40gb" / "elementwise.json", measurements)
    inputs = [kernel, system, hlo, *ranks, measurements]
    before = {p: p.read_bytes() for p in inputs}
    for args in [
        ("simulate", "--arch", "h100", str(kernel), "--timeline", str(kernel)),
        ("replay", str(system), "--system", "dgx-h100", "--timeline", str(system)),
        ("import", "hlo", str(hlo), "--system", "dgx-h100", "-o", str(hlo)),
        ("import", "chakra", *map(str, ranks), "-o", str(ranks[1])),
        ("calibrate", "--arch", "a100-sxm4-40gb", "--measurements", str(tmp_path / "m"), "--fit", "launch_overhead",
         "-o", str(measurements)),
    ]:
        result = cli(*args)
        assert result.code == 2 and "is also an input" in result.err, (args, result.err)
        assert result.err.count("\n") == 1
    assert {p: p.read_bytes() for p in inputs} == before


def test_an_unwritable_calibration_output_is_refused_before_the_fit(cli, capsys, tmp_path):
    import shutil

    # calibrate fits on microbenchmark-level records only: the STREAM kernels, not the folder's layer norms
    shutil.copy(ROOT / "validation" / "reference" / "a100-sxm4-40gb" / "elementwise.json", tmp_path)
    result = cli("calibrate", "--arch", "a100-sxm4-40gb", "--measurements", str(tmp_path), "--fit", "launch_overhead",
                 "-o", "/proc/accelsim-test.yaml")
    assert result.code == 2 and result.err.count("\n") == 1 and "cannot write" in result.err
    assert "sweep 1" not in result.err  # refused before the fit ran


def test_an_unmakeable_report_folder_is_refused_before_the_work(cli):
    measurements = str(ROOT / "validation" / "reference" / "a100-sxm4-40gb")
    result = cli("validate", "--arch", "a100-sxm4-40gb", "--measurements", measurements, "-o", "/proc/accelsim-x")
    assert result.code == 2 and result.err.count("\n") == 1 and "cannot make folder" in result.err


def test_an_output_over_the_config_given_is_refused(cli, tmp_path):
    import shutil

    chip = tmp_path / "chip.yaml"
    shutil.copy(ROOT / "arch_configs" / "gpu" / "h100-sxm.yaml", chip)
    system = tmp_path / "node.yaml"
    shutil.copy(ROOT / "arch_configs" / "systems" / "dgx-h100-published.yaml", system)
    (system.parent / "h100-sxm.yaml").write_text(chip.read_text())  # the chip the node names, beside it
    before = chip.read_bytes(), system.read_bytes()
    for args in [
        (*GEMM[:2], str(chip), *GEMM[4:], "--timeline", str(chip)),
        ("replay", TRACE, "--system", str(system), "--timeline", str(system)),
        ("import", "hlo", HLO, "--system", str(system), "-o", str(system)),
    ]:
        result = cli(*args)
        assert result.code == 2 and "is also an input" in result.err, (args, result.err)
    assert (chip.read_bytes(), system.read_bytes()) == before


def test_an_output_file_that_is_a_folder_inside_the_report_folder_is_one_line(cli, tmp_path):
    (tmp_path / "out" / "roofline.png").mkdir(parents=True)
    measurements = str(ROOT / "validation" / "reference" / "a100-sxm4-40gb")
    result = cli("validate", "--arch", "a100-sxm4-40gb", "--measurements", measurements, "-o", str(tmp_path / "out"))
    assert result.code == 2 and result.err.count("\n") == 1 and "roofline.png: Is a directory" in result.err


def test_an_output_over_a_config_given_by_name_is_refused(cli, tmp_path, monkeypatch):
    """--arch / --system may name a built-in config: the files it is built from (its own,
    those it extends, the chip a system names) are inputs too. Run on a copy of the configs."""
    import shutil

    from accelsim.arch import loader

    shutil.copytree(ROOT / "arch_configs", tmp_path / "configs")
    monkeypatch.setattr(loader, "builtin_dir", lambda: tmp_path / "configs")
    loader._builtin_index.cache_clear()
    try:
        chip = tmp_path / "configs" / "gpu" / "h100-sxm.yaml"
        node = tmp_path / "configs" / "systems" / "dgx-h100-published.yaml"  # what dgx-h100 extends
        before = chip.read_bytes(), node.read_bytes()
        measurements = str(ROOT / "validation" / "reference" / "h100-sxm" / "gemm.json")
        for args in [
            ("simulate", "--arch", "h100-pcie", "--kernel", "gemm", "--param", "M=512", "--param", "N=512",
             "--param", "K=512", "--timeline", str(chip)),
            ("replay", TRACE, "--system", "dgx-h100", "--timeline", str(chip)),
            ("import", "hlo", HLO, "--system", "dgx-h100", "-o", str(node)),
            ("calibrate", "--arch", "h100-sxm", "--measurements", measurements, "--bands-only", "-o", str(chip)),
        ]:
            result = cli(*args)
            assert result.code == 2 and "is also an input" in result.err, (args, result.err)
        assert (chip.read_bytes(), node.read_bytes()) == before
    finally:
        loader._builtin_index.cache_clear()
