"""Output files: checked before the work that fills them, written atomically (a
temporary file in the same folder renamed into place), so a bad path fails at once with
one line and a failed run leaves nothing half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from accelsim.errors import InputError


def check_output_file(path: str | Path, flag: str | None = None) -> Path:
    """``path`` as a file to write: refused (one line naming ``flag`` or the path) when
    it is empty, a folder, or in a folder that does not exist."""
    where = flag or str(path)
    if not str(path).strip():
        raise InputError("expected a file path, got an empty one", source=where)
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a folder; expected a file path", source=where)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"folder {str(parent)!r} does not exist", source=where)
    return path


def check_output_dir(path: str | Path, flag: str | None = None) -> Path:
    """``path`` as a folder to write into (made if missing): refused when it is a file or
    cannot be made."""
    where = flag or str(path)
    if not str(path).strip():
        raise InputError("expected a folder path, got an empty one", source=where)
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{str(path)!r} is a file; expected a folder", source=where)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make folder {str(path)!r}: {exc.strerror or exc}", source=where) from None
    return path


def write_text_atomic(path: str | Path, text: str, flag: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically; an unwritable place is one-line bad input."""
    path = check_output_file(path, flag)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}", source=flag or str(path)) from None
    return path


def write_json(path: str | Path, data: Any, flag: str | None = None) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=None, separators=(",", ":")), flag)
