"""Plots regenerate byte for byte whatever style the user's matplotlib has: a committed
validation report, written again with a larger font and another colour cycle set (as a
``matplotlibrc`` or ``plt.style.use`` would), has the same bytes."""

from __future__ import annotations

import matplotlib
import pytest
from cycler import cycler

from tests.conftest import REPO

REPORT = REPO / "validation" / "reports" / "a100-sxm4-40gb"
COMMAND = ("validate", "--arch", "a100-sxm4-40gb", "--measurements", str(REPO / "validation" / "reference" /
           "a100-sxm4-40gb"), "--exclude", "FlashAttention-2", "--exclude", "CUTLASS", "--exclude", "huggingface")


@pytest.mark.parametrize("style", [{}, {"font.size": 17, "axes.prop_cycle": cycler(color=["red", "green"]),
                                        "figure.dpi": 50, "savefig.facecolor": "yellow"}])
def test_a_committed_report_is_written_again_byte_for_byte(cli, tmp_path, monkeypatch, style):
    monkeypatch.chdir(REPO)  # the report names its inputs as given
    with matplotlib.rc_context(style):
        result = cli(*COMMAND, "-o", str(tmp_path / "report"))
    assert result.code == 0, result.err
    written = sorted(p.name for p in (tmp_path / "report").iterdir())
    assert written == sorted(p.name for p in REPORT.iterdir())
    for name in written:
        assert (tmp_path / "report" / name).read_bytes() == (REPORT / name).read_bytes(), name
