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
