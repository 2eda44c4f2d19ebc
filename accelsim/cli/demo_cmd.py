"""``accelsim demo``: the built-in tour."""

from __future__ import annotations

import argparse

from accelsim.cli import arch_cmd


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the built-in tour on default settings")
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    print("accelsim: built-in architectures\n")
    return arch_cmd.run_list(args)
