"""Size limits that keep the package readable (STYLE.md: no god classes, no 400-line
functions): no class in ``accelsim/`` over 300 lines, and no function in the simulation
core (``engine``, ``system``, ``network``) over 80 lines. Read from the source by AST;
a class or function counts from its ``class``/``def`` line to its last line."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "accelsim"
MAX_CLASS_LINES = 300
MAX_CORE_FUNCTION_LINES = 80
CORE = ("engine", "system", "network")


def _definitions(kinds: tuple[type, ...], folders: tuple[Path, ...]) -> list[tuple[str, int]]:
    """(``path:line name``, lines) of every definition of these kinds, nested ones too."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, kinds):
                    where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
                    found.append((where, node.end_lineno - node.lineno + 1))
    return found


def test_the_walk_sees_the_package():
    classes = _definitions((ast.ClassDef,), (PACKAGE,))
    functions = _definitions((ast.FunctionDef, ast.AsyncFunctionDef), tuple(PACKAGE / unit for unit in CORE))
    assert len(classes) > 100 and len(functions) > 100


def test_no_class_is_over_300_lines():
    long = [f"{where}: {lines} lines" for where, lines in _definitions((ast.ClassDef,), (PACKAGE,))
            if lines > MAX_CLASS_LINES]
    assert not long, "split these classes:\n" + "\n".join(long)


def test_no_core_function_is_over_80_lines():
    long = [f"{where}: {lines} lines"
            for where, lines in _definitions((ast.FunctionDef, ast.AsyncFunctionDef),
                                             tuple(PACKAGE / unit for unit in CORE))
            if lines > MAX_CORE_FUNCTION_LINES]
    assert not long, "split these functions:\n" + "\n".join(long)
