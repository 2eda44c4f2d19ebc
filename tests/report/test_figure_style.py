"""Plots regenerate byte for byte whatever style the user's matplotlib has: a committed
validation report, written again with a larger font and another colour cycle set (as a
``matplotlibrc`` or ``plt.style.use`` would), has the same bytes."""

from __future__ import annotations

import shlex

import matplotlib
import pytest
from cycler import cycler

from tests.conftest import REPO

REPORT = REPO / "validation" / "reports" / "a100-sxm4-40gb"
OUTPUT = "validation/reports/a100-sxm4-40gb"


def header_command() -> list[str]:
    """The command the committed report's header says regenerates it, without ``-o``."""
    line = next(l for l in (REPORT / "report.md").read_text(encoding="utf-8").splitlines() if "Regenerate: `" in l)
    words = shlex.split(line.split("Regenerate: `", 1)[1].split("`", 1)[0])
    assert words[:2] == ["accelsim", "validate"] and words[-2:] == ["-o", OUTPUT], words
    return words[1:-2]


@pytest.mark.parametrize("style", [{}, {"font.size": 17, "axes.prop_cycle": cycler(color=["red", "green"]),
                                        "figure.dpi": 50, "savefig.facecolor": "yellow"}])
def test_a_committed_report_is_written_again_byte_for_byte(cli, tmp_path, monkeypatch, style):
    monkeypatch.chdir(REPO)  # the report names its inputs as given
    with matplotlib.rc_context(style):
        result = cli(*header_command(), "-o", str(tmp_path / "report"))
    assert result.code == 0, result.err
    written = sorted(p.name for p in (tmp_path / "report").iterdir())
    assert written == sorted(p.name for p in REPORT.iterdir())
    for name in written:
        again = (tmp_path / "report" / name).read_bytes().replace(str(tmp_path / "report").encode(), OUTPUT.encode())
        assert again == (REPORT / name).read_bytes(), name
