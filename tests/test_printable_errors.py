"""An error line never carries a character a terminal acts on: names echoed from the
input (a config's keys, a ``--set`` path, a file name) have their controls escaped."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError, printable, shown_text

ESC = "\x1b[2J"  # clear the screen


def test_controls_are_escaped_and_printable_text_kept():
    assert printable(f"hbm.{ESC}x\a") == "hbm.\\x1b[2Jx\\x07"
    assert printable("\u202eevil") == "\\u202eevil"  # a bidirectional override reorders what is shown
    assert printable("épée 8 TB/s") == "épée 8 TB/s"
    assert shown_text(ESC * 40).isprintable() and len(shown_text(ESC * 40)) <= 80


def test_a_located_error_line_is_printable():
    line = InputError(f"unknown field {ESC}", source=f"a{ESC}.yaml", line=3, field=("hbm", ESC)).one_line()
    assert line.isprintable() and line == "a\\x1b[2J.yaml:3: hbm.\\x1b[2J: unknown field \\x1b[2J"


@pytest.mark.parametrize("args", [
    ("simulate", "--arch", "h100-sxm", "--kernel", "copy", "--param", "bytes=1024", "--set", f"hbm.{ESC}=1"),
    ("simulate", "--arch", f"/tmp/no{ESC}.yaml", "--kernel", "copy", "--param", "bytes=1024"),
])
def test_the_cli_prints_no_control_character(cli, args):
    result = cli(*args)
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.rstrip("\n").isprintable() and "\\x1b[2J" in result.err, result.err


def test_a_config_key_with_controls_is_echoed_escaped(cli, tmp_path):
    path = tmp_path / "chip.yaml"
    path.write_text('name: x\nextends: h100-sxm\n"bad\\e[2Jkey": 1\n')  # YAML's escape of ESC
    result = cli("arch", "show", str(path))
    assert result.code == 2 and result.err.rstrip("\n").isprintable() and "chip.yaml:3: bad\\x1b[2Jkey" in result.err
