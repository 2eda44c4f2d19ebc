"""The one error type for bad user input (configs, traces, command-line values).

The CLI prints :meth:`InputError.one_line` and exits with status 2; every other
layer raises it with as much location as it knows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def format_path(path: Sequence[object]) -> str:
    """``("hbm", "bandwidth")`` -> ``hbm.bandwidth``; list indices as ``[i]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class InputError(Exception):
    """Bad input, located: the file (and line where known), the field path and what was expected."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: Sequence[object] | str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.field = format_path(field) if field is not None and not isinstance(field, str) else field

    def one_line(self) -> str:
        where = self.source or ""
        if where and self.line is not None:
            where += f":{self.line}"
        parts = [p for p in (where, self.field) if p]
        text = ": ".join(parts + [self.message])
        return " ".join(text.split())

    def __str__(self) -> str:
        return self.one_line()

    def __reduce__(self):
        """Pickled whole (worker processes send it back): message, file, line and field."""
        return _rebuild_input_error, (self.message, self.source, self.line, self.field)


def _rebuild_input_error(message: str, source: str | None, line: int | None, field: str | None) -> InputError:
    return InputError(message, source=source, line=line, field=field)


def read_json_file(path: str | Path, what: str) -> Any:
    """The parsed JSON of a ``what`` file (e.g. "trace"); unreadable files and invalid
    JSON become one-line :class:`InputError` s naming the file (and line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", source=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", source=str(path), line=exc.lineno) from None
