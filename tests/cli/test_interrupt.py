"""Ctrl-C ends a command with one line and status 130, not a traceback."""

import argparse

from accelsim.cli import main as cli_main


def test_an_interrupt_is_one_line(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(run=interrupted)

    monkeypatch.setattr(cli_main, "build_parser", lambda: Parser())
    assert cli_main.main(["simulate"]) == 130
    assert capsys.readouterr().err == "accelsim: interrupted\n"
