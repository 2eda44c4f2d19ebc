"""What Pallas and Triton capture share: loading the user's ``FILE.py:FUNCTION``, typing
``--param`` values, and calling it.

Convention: FUNCTION takes keyword arguments (the ``--param`` values), builds its
inputs and calls the kernel. Values that look like integers become ``int``,
``true``/``false`` become ``bool``, anything else stays a string.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from accelsim.errors import InputError, shown


def split_target(target: str) -> tuple[str, str]:
    """``"kernels/pallas/matmul.py:run"`` -> (path, function)."""
    path, sep, function = target.rpartition(":")
    if not sep or not path or not function.isidentifier():
        raise InputError(f"expected FILE.py:FUNCTION, got {shown(target)}", source="capture")
    return path, function


def typed_params(params: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        text = str(value).strip()
        if text.lower() in ("true", "false"):
            out[key] = text.lower() == "true"
        else:
            try:
                out[key] = int(text)
            except ValueError:
                out[key] = text
    return out


def load_function(path: str, function: str) -> Callable[..., Any]:
    file = Path(path)
    if not file.is_file():
        raise InputError("no such file", source=path)
    module_name = f"_accelsim_capture_{abs(hash(file.resolve()))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise InputError("cannot import this file as Python", source=path)
    module = importlib.util.module_from_spec(spec)
    root = str(_project_root(file))
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's module failed: say where, not a traceback
        raise InputError(f"importing failed: {type(exc).__name__}: {exc}", source=path) from None
    except SystemExit as exc:
        raise InputError(f"importing it called sys.exit({exc.code!r})", source=path) from None
    fn = getattr(module, function, None)
    if not callable(fn):
        raise InputError(f"no function {shown(function)} in this file", source=path)
    return fn


def _project_root(file: Path) -> Path:
    """The nearest folder above the file that holds a ``pyproject.toml`` (so kernels can
    import their siblings as ``kernels.pallas...``), else the file's folder."""
    for parent in file.resolve().parents:
        if (parent / "pyproject.toml").exists():
            return parent
    return file.resolve().parent


LANGUAGES = {"triton": ("triton",), "pallas": ("jax.experimental.pallas", "jax._src.pallas")}
"""Each kernel language and the modules whose objects say a kernel is written in it."""


def languages_used(fn: Callable[..., Any]) -> set[str]:
    """The kernel languages the module defining ``fn`` uses: the modules and objects (a
    ``@triton.jit`` kernel, ``pl.pallas_call``) it holds, and those held by the modules its
    functions come from (a runner that imports its kernel from a sibling file)."""
    namespaces = [getattr(fn, "__globals__", {})]
    namespaces += [value.__globals__ for value in list(namespaces[0].values())
                   if isinstance(value, types.FunctionType) and value.__globals__ is not namespaces[0]]
    found = set()
    for namespace in namespaces:
        for value in list(namespace.values()):
            name = value.__name__ if isinstance(value, types.ModuleType) else type(value).__module__
            owner = getattr(value, "__module__", None) or ""
            for language, prefixes in LANGUAGES.items():
                if any(n == p or n.startswith(p + ".") for n in (name, owner) for p in prefixes):
                    found.add(language)
    return found


def check_language(fn: Callable[..., Any], tool: str, source: str) -> None:
    """Where capture found no kernel of ``tool``'s language, or failed to run: if the file
    holds a kernel of the other language only, say so (Pallas capture of a Triton kernel
    fails with "0 active drivers", Triton capture of a Pallas kernel finds no launch)."""
    used = languages_used(fn)
    other = ({"triton", "pallas"} - {tool}).pop()
    if other in used and tool not in used:
        raise InputError(f"this is a {other.capitalize()} kernel, not a {tool.capitalize()} one: capture it with "
                         f"'accelsim capture {other}'", source=source)
