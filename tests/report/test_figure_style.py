"""Plots regenerate byte for byte whatever style the user's matplotlib has: a committed
validation report, written again with a larger font and another colour cycle set (as a
``matplotlibrc`` or ``plt.style.use`` would), has the same bytes."""

from __future__ import annotations

import matplotlib
import pytest
from cycler import cycler

from tests.conftest import REPO

REPORT = REPO / "validation" / "reports" / "a100-sxm4-40gb"
COMMAND = ("validate", "--arch", "a100-sxm4-40gb", "--measurements", "validation/reference/a100-sxm4-40gb")
"""The report's own command (``-o validation/reports/a100-sxm4-40gb``), paths relative to the repository."""


@pytest.mark.parametrize("style", [{}, {"font.size": 17, "axes.prop_cycle": cycler(color=["red", "green"]),
                                        "figure.dpi": 50, "savefig.facecolor": "yellow"}])
def test_a_committed_report_is_written_again_byte_for_byte(cli, tmp_path, monkeypatch, style):
    # the report names its inputs and output as given: run its command with the same relative paths,
    # the measurements reached through a link, the output written under tmp_path
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "reference").symlink_to(REPO / "validation" / "reference")
    monkeypatch.chdir(tmp_path)
    with matplotlib.rc_context(style):
        result = cli(*COMMAND, "-o", "validation/reports/a100-sxm4-40gb")
    assert result.code == 0, result.err
    out = tmp_path / "validation" / "reports" / "a100-sxm4-40gb"
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(p.name for p in REPORT.iterdir())
    for name in written:
        assert (out / name).read_bytes() == (REPORT / name).read_bytes(), name
