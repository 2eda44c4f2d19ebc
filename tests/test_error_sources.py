"""Below the CLI, an error names the field of its input, never a command-line option: the
same family, replay or validation is driven by a file as often as by a flag, and only the
CLI knows which option gave a field (``errors.located_at_option``; docs/architecture.md,
"Errors"). This reads every module outside ``accelsim/cli`` for a flag given as where an
error is (``source="--param"``, ``source: str = "--param"``, ``flag="-o"``)."""

from __future__ import annotations

import ast
from pathlib import Path

import accelsim

PACKAGE = Path(accelsim.__file__).parent
LOCATING = {"source", "flag", "option"}
"""Names of the arguments and parameters that say where an error is."""


def _flag(node: ast.AST | None) -> str | None:
    """The option a constant or f-string names, if it starts like one (``--param``, ``-o``)."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("-"):
        return node.value
    return None


def _flags_named(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [(k.value.lineno, _flag(k.value)) for k in node.keywords if k.arg in LOCATING and _flag(k.value)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)]
            found += [(default.lineno, _flag(default)) for arg, default in pairs
                      if arg.arg in LOCATING and _flag(default)]
    return found


def _lower_layer_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if (PACKAGE / "cli") not in p.parents)


def test_no_module_below_the_cli_locates_an_error_at_a_flag():
    named = [f"{path.relative_to(PACKAGE.parent)}:{line}: {flag}"
             for path in _lower_layer_modules()
             for line, flag in _flags_named(ast.parse(path.read_text(encoding="utf-8")))]
    assert not named, "errors below the CLI name fields, which the CLI maps to its flags:\n" + "\n".join(named)


def test_the_check_finds_a_flag_in_each_form():
    tree = ast.parse('raise InputError("bad", source="--param")\n'
                     'raise InputError("bad", source=f"--group {name}")\n'
                     'def parse(text, source="--space"): ...\n'
                     'def refuse(records, *, flag="-o"): ...\n'
                     'raise InputError("bad", field="params.block_m")\n')
    assert sorted(flag for _, flag in _flags_named(tree)) == ["--group ", "--param", "--space", "-o"]
