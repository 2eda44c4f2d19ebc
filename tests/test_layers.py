"""The import contract (docs/architecture.md): every module of the package belongs to one
unit, units sit in layers, and a module imports only from its own unit or from a lower
layer. Units side by side in one layer are independent. So no unit imports a higher one
and there are no cycles between units.

Imports are read from the source (every ``import`` and ``from`` statement, those inside
functions included); imports under ``if TYPE_CHECKING:`` load nothing and are left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "accelsim"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("foundation",),
    ("registries",),
    ("trace", "arch"),
    ("engine",),
    ("families", "network"),
    ("system", "capture"),
    ("importers", "model"),
    ("study", "validate"),
    ("report",),
    ("cli",),
)
"""Lowest first; units in one tuple may not import each other."""

UNITS: dict[str, str] = {
    "accelsim": "foundation",
    "accelsim.errors": "foundation",
    "accelsim.units": "foundation",
    "accelsim.files": "foundation",
    "accelsim.arrays": "foundation",
    "accelsim.text": "foundation",
    "accelsim.registry": "foundation",
    "accelsim.workers": "foundation",
    "accelsim.results": "foundation",
    "accelsim.figures": "foundation",
    "accelsim.blas": "foundation",
    "accelsim.families.": "families",
    "accelsim.families": "registries",
}
"""Modules that are not their subpackage's unit, by exact name (or by prefix, ending in
a dot). ``accelsim.families`` itself is the kernel family registry: it names each family's
module without importing it, so the arch layer may check a config's family names."""

SUBLAYERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "network": (
        ("topology",),
        ("groups", "collectives", "analytic"),
        ("algorithms",),
        ("auto",),
        ("simulate",),
    ),
}
"""Layers inside a unit, by module (or subpackage) name under it, lowest first: the
collective algorithms plan without the simulator (they are given a timing function)."""


def unit_of(module: str) -> str | None:
    if module in UNITS:
        return UNITS[module]
    prefixes = [p for p in UNITS if p.endswith(".") and module.startswith(p)]
    if prefixes:
        return UNITS[max(prefixes, key=len)]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "accelsim" else None


def layer_of(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports_of(path: Path) -> list[Import]:
    importer = module_name(path)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_lines(tree)
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [Import(importer, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append(Import(importer, target if is_module(target) else base, node.lineno))
    return [i for i in found if i.imported == "accelsim" or i.imported.startswith("accelsim.")]


def all_imports() -> list[Import]:
    return [i for path in sorted(PACKAGE.rglob("*.py")) for i in imports_of(path)]


def unit_violation(imp: Import) -> str | None:
    """Why ``imp`` breaks the layers between units, or None."""
    mine, theirs = unit_of(imp.importer), unit_of(imp.imported)
    if mine == theirs:
        return None
    if layer_of(theirs) > layer_of(mine):
        return f"{imp}: {mine} may not import {theirs}, a higher layer"
    if layer_of(theirs) == layer_of(mine):
        return f"{imp}: {mine} and {theirs} are independent (one layer)"
    return None


def sublayer_of(unit: str, module: str) -> int | None:
    rest = module.removeprefix(f"accelsim.{unit}").lstrip(".").split(".")[0]
    return next((i for i, layer in enumerate(SUBLAYERS[unit]) if rest in layer), None)


def sublayer_violation(imp: Import) -> str | None:
    unit = unit_of(imp.importer)
    if unit not in SUBLAYERS or unit_of(imp.imported) != unit:
        return None
    mine, theirs = sublayer_of(unit, imp.importer), sublayer_of(unit, imp.imported)
    if mine is not None and theirs is not None and theirs > mine:
        return f"{imp}: inside {unit}, a lower module may not import a higher one"
    return None


def test_every_module_has_a_unit_in_the_layers():
    units = {unit_of(module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert units <= {u for layer in LAYERS for u in layer}, units


def test_no_unit_imports_a_higher_or_independent_one():
    assert [v for v in map(unit_violation, all_imports()) if v] == []


def test_inside_a_unit_the_sublayers_hold():
    assert [v for v in map(sublayer_violation, all_imports()) if v] == []


@pytest.mark.parametrize(("importer", "imported", "broken"), [
    ("accelsim.arch.model", "accelsim.families.gemm", True),  # the cycle arch -> families -> engine -> arch
    ("accelsim.arch.model", "accelsim.families", False),  # the registry's names only
    ("accelsim.trace.kernel", "accelsim.arch.schema", True),  # workload and machine are independent inputs
    ("accelsim.validate.compare", "accelsim.study.runner", True),
    ("accelsim.importers.nccl_tests", "accelsim.validate.compare", True),
    ("accelsim.cli.main", "accelsim.report.roofline", False),
])
def test_the_contract_catches_the_imports_it_forbids(importer, imported, broken):
    assert (unit_violation(Import(importer, imported, 1)) is not None) == broken


def test_planners_may_not_import_the_simulator():
    imp = Import("accelsim.network.algorithms.torus", "accelsim.network.simulate", 1)
    assert sublayer_violation(imp) is not None


def test_relative_and_type_only_imports(tmp_path, monkeypatch):
    package = tmp_path / "accelsim"
    (package / "arch").mkdir(parents=True)
    (package / "arch" / "__init__.py").write_text("")
    (package / "arch" / "model.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import schema\nfrom ..units import parse\n"
        "if TYPE_CHECKING:\n    from accelsim.cli import main\n")
    (package / "arch" / "schema.py").write_text("")
    monkeypatch.setitem(globals(), "PACKAGE", package)
    found = {i.imported for i in imports_of(package / "arch" / "model.py")}
    assert found == {"accelsim.arch.schema", "accelsim.units"}
