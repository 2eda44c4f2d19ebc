"""The ``accelsim`` command line. Bad input prints one line and exits with status 2."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Sequence
from importlib import metadata

from accelsim.arch.loader import OverrideError
from accelsim.errors import InputError, located_at_option, shown, shown_text

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line (and exit 2) instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("accelsim").strip() or None
        option = re.fullmatch(r"argument (?:\S+/)?(--\S+): expected one argument", message)
        if option:  # argparse takes a value that starts with '-' for an option
            message += f" (if the value starts with '-', write {option.group(1)}=VALUE)"
        raise InputError(f"{message} (see '{self.prog} --help')", source=command)


def build_parser() -> argparse.ArgumentParser:
    from accelsim.cli import arch_cmd, calibrate_cmd, capture_cmd, compile_cmd, demo_cmd, explore_cmd, import_cmd, model_cmd, replay_cmd, simulate_cmd, sweep_cmd, validate_cmd

    parser = _Parser(
        prog="accelsim",
        description="Architecture-level simulator for ML accelerators (GPUs and TPUs).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    arch_cmd.register(sub)
    simulate_cmd.register(sub)
    capture_cmd.register(sub)
    compile_cmd.register(sub)
    calibrate_cmd.register(sub)
    validate_cmd.register(sub)
    demo_cmd.register(sub)
    replay_cmd.register(sub)
    model_cmd.register(sub)
    import_cmd.register(sub)
    sweep_cmd.register(sub)
    explore_cmd.register(sub)
    return parser


def installed_version() -> str:
    """The version pip installed; a checkout run without installing says so."""
    try:
        return metadata.version("accelsim")
    except metadata.PackageNotFoundError:
        return "(not installed: run from a source checkout)"


ASSIGNMENT_OPTIONS = {"--param": "K=V", "--set": "PATH=VALUE", "--routing": "NAME=VALUE"}


def check_assignments(argv: Sequence[str]) -> None:
    """``--param M 1024``: the ``=`` forgotten. argparse would take ``1024`` for a positional
    argument and complain about that instead ("give a trace file or --kernel, not both")."""
    for i, token in enumerate(argv[:-1]):
        form = ASSIGNMENT_OPTIONS.get(token)
        value = argv[i + 1]
        if form is None or "=" in value:
            continue
        after = argv[i + 2] if i + 2 < len(argv) and not argv[i + 2].startswith("-") else None
        fix = f" (write {token} {shlex.quote(f'{value}={after}')})" if after is not None else ""
        raise InputError(f"expected {form}, got {shown(value)}: the '=' is missing{fix}", source=token)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    options_of_fields: dict[str, str] = {}
    """The options that fill fields the lower layers' errors name (a command's ``options_of_fields``)."""
    try:
        check_assignments(argv)
        args = parser.parse_args(argv)
        options_of_fields = getattr(args, "options_of_fields", {})
        return int(args.run(args) or 0)
    except InputError as exc:
        if isinstance(exc, OverrideError) and exc.source is None:  # every command takes overrides as --set
            exc.source = "--set"
        located_at_option(exc, options_of_fields)
        print(f"accelsim: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RecursionError:  # nesting the readers did not bound (each known one is an InputError)
        print("accelsim: error: the input is nested too deeply to process", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("accelsim: error: out of memory: the input is too large to simulate on this machine", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path given that cannot be read or written (checked up front where known)
        where = f"{shown_text(str(exc.filename))}: " if exc.filename else ""
        print(f"accelsim: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # Ctrl-C: outputs are written atomically, a sweep resumes from its journal
        print("accelsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
