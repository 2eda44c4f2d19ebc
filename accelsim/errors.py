"""The one error type for bad user input (configs, traces, command-line values).

The CLI prints :meth:`InputError.one_line` and exits with status 2; every other
layer raises it with as much location as it knows.
"""

from __future__ import annotations

import json
import os
import reprlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


MAX_SHOWN_CHARS = 80
"""The most an error line echoes of one offending value: enough to recognise it, never
the whole of a value of 300 kB (an echo is a pointer to the input, not a copy of it)."""
MAX_LINE_CHARS = 283
"""An error line is cut to this length when it would run longer (a list of the choices
expected, a value no echo site has shortened): it still reads as one line, and the file,
field and what went wrong come first. With the CLI's ``accelsim: error: `` before it, the
printed line stays within 300 characters."""


def _echo_repr() -> reprlib.Repr:
    echo = reprlib.Repr()
    echo.maxlevel, echo.maxstring, echo.maxlong, echo.maxother = 3, MAX_SHOWN_CHARS - 2, 40, MAX_SHOWN_CHARS
    echo.maxlist = echo.maxtuple = echo.maxdict = echo.maxset = echo.maxfrozenset = echo.maxdeque = 4
    return echo


_ECHO = _echo_repr()


def shown(value: object) -> str:
    """``repr(value)`` as an error line echoes it: nested and long values cut (``'aaa...aaa'``,
    ``[1, 2, 3, 4, ...]``) to at most :data:`MAX_SHOWN_CHARS` characters, without building the
    whole repr first (a value of nested aliases expands to gigabytes)."""
    try:
        text = _ECHO.repr(value)
    except ValueError:  # an integer past Python's 4300-digit conversion limit
        return f"an integer of {value.bit_length():,} bits" if isinstance(value, int) else type(value).__name__
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 3] + "..."


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (``ESC``, ``BEL``, other
    controls) written as its escape (``\\x1b``): an error line echoes names from the input
    (a config's keys, a path, a ``--set`` field), and those must not drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown_text(text: str) -> str:
    """``text`` itself (no quotes, controls escaped: :func:`printable`) cut as :func:`shown`
    cuts a value: a name or path echoed bare."""
    text = printable(text)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS // 2 - 2] + "..." + text[-(MAX_SHOWN_CHARS // 2 - 1):]


def format_path(path: Sequence[object]) -> str:
    """``("hbm", "bandwidth")`` -> ``hbm.bandwidth``; list indices as ``[i]``; a key of a
    huge mapping cut (:func:`shown_text`)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + shown_text(str(part))
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
        text = printable(" ".join(": ".join(parts + [self.message]).split()))
        return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS - 4] + " ..."

    def __str__(self) -> str:
        return self.one_line()

    def __reduce__(self):
        """Pickled whole (worker processes send it back): message, file, line and field."""
        return _rebuild_input_error, (self.message, self.source, self.line, self.field)


def checked(check: Callable[[T], None], value: T, source: str) -> T:
    """``value`` once ``check(value)`` passes; a whole-input check's
    ``ValueError("field.path: message")`` becomes an InputError located in ``source``."""
    try:
        check(value)
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        raise InputError(message, source=source, field=field) from None
    return value


def located_at_option(exc: InputError, options: Mapping[str, str]) -> InputError:
    """``exc`` as the command line shows it: an error that names no file and whose field a
    command-line option gave (``options``: field -> option, ``{"algorithm": "--algorithm"}``)
    names the option instead, and a field below it is named under the option
    (``{"params": "--param"}``: ``params.block_m`` -> ``--param: block_m``). Lower layers
    name fields only; the CLI alone knows which option filled a field, so this is where a
    field becomes a flag."""
    if exc.source is not None or exc.field is None:
        return exc
    if exc.field in options:
        exc.source, exc.field = options[exc.field], None
        return exc
    head, dot, rest = exc.field.partition(".")
    if dot and head in options:
        exc.source, exc.field = options[head], rest
    return exc


def _rebuild_input_error(message: str, source: str | None, line: int | None, field: str | None) -> InputError:
    return InputError(message, source=source, line=line, field=field)


MAX_INPUT_BYTES = 4 * 2**30
"""The largest input file read (an HLO module of a very large model is a few hundred MB)."""


def read_text_file(path: str | Path, what: str, hint: str = "a compressed or binary file?") -> str:
    """The text of a ``what`` file (e.g. "trace"); a missing or unreadable file, a folder,
    or bytes that are not UTF-8 (a compressed or binary file; ``hint`` says what to do)
    become one-line :class:`InputError` s naming the file."""
    path = Path(path)
    if "\0" in str(path):  # no file system holds such a name (open() would raise ValueError)
        raise InputError(f"cannot read {what}: the path holds a NUL byte", source=shown(str(path)))
    try:
        if path.exists() and not path.is_dir() and not path.is_file():
            raise InputError(f"cannot read {what}: not a regular file (a pipe, device or socket)", source=str(path))
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_INPUT_BYTES:
                raise InputError(f"cannot read {what}: larger than {MAX_INPUT_BYTES // 2**30} GiB",
                                 source=str(path))
            data = f.read()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as open() reads text
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {what}: not UTF-8 text (byte {exc.start}; {hint})",
                         source=str(path)) from None


def check_path_text(text: str) -> str:
    """A file path as an input names it: printable text (no NUL byte, which no file system
    holds in a name, and no control characters, which would be echoed to terminals)."""
    if not text.isprintable():
        raise ValueError(f"expected a file path (printable text), got {shown(text)}")
    return text


def reject_json_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (Python's json keeps the last of a key given
    twice, silently): a key given twice is ambiguous input."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {twice!r} appears twice in one object")
    return obj


@contextmanager
def json_errors(source: str) -> Iterator[None]:
    """Decoding errors inside as one-line :class:`InputError` s naming ``source`` (and
    the line): syntax, ``NaN`` or ``Infinity`` (:func:`reject_json_constant`), nesting too
    deep to walk."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", source=source, line=exc.lineno) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON: {exc}", source=source) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source) from None


def parse_json_text(text: str, source: str) -> Any:
    """JSON as the standard allows it: ``NaN`` and ``Infinity`` (which Python's json would
    accept) are refused, and so is nesting too deep to walk; one-line errors."""
    with json_errors(source):
        return json.loads(text, parse_constant=reject_json_constant, object_pairs_hook=reject_duplicate_keys)


def read_json_file(path: str | Path, what: str) -> Any:
    """The parsed JSON of a ``what`` file (e.g. "trace"); unreadable files and invalid
    JSON become one-line :class:`InputError` s naming the file (and line)."""
    return parse_json_text(read_text_file(path, what), str(path))
