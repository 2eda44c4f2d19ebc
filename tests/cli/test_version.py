"""``accelsim --version`` prints the installed version and exits 0."""

from __future__ import annotations

import pytest

from accelsim.cli.main import installed_version, main


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"accelsim {installed_version()}"
    assert installed_version()[0].isdigit() or "not installed" in installed_version()
