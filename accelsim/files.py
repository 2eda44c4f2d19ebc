"""Output files: checked before the work that fills them, written atomically (a
temporary file in the same folder renamed into place), so a bad path fails at once with
one line and a failed run leaves nothing half-written. A symlink is written through (the
temporary file goes beside its target, the link stays); a path that exists but is not a
regular file (``/dev/null``, a FIFO, ``/dev/stdout``) is written directly, never
replaced."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelsim.errors import InputError, shown


def check_output_file(path: str | Path, flag: str | None = None, *, inputs: Sequence[str | Path] = ()) -> Path:
    """``path`` as a file to write, asked before the work: refused (one line naming
    ``flag`` or the path) when it is empty, a folder, in a folder that does not exist, one
    of the command's ``inputs`` (files), which it would overwrite, or where no file can be
    made."""
    where = flag or str(path)
    path = _output_path(path, where)
    given = _input_at(path, inputs)
    if given is not None:
        raise InputError(f"{shown(str(path))} is also an input ({shown(str(given))}); writing it would overwrite "
                         "that input: choose another path", source=where)
    _probe(path, where)
    return path


def _input_at(path: Path, inputs: Sequence[str | Path]) -> str | Path | None:
    """The input that is the file at ``path`` (which writing ``path`` would overwrite), if any."""
    if path.is_file():
        for given in inputs:
            if Path(given).is_file() and os.path.samefile(given, path):
                return given
    return None


def _output_path(path: str | Path, where: str) -> Path:
    """``path`` unless it is empty, a folder, or in a folder that does not exist."""
    if not str(path).strip():
        raise InputError("expected a file path, got an empty one", source=where)
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{shown(str(path))} is a folder; expected a file path", source=where)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"folder {shown(str(parent))} does not exist", source=where)
    return path


def _probe(path: Path, where: str) -> None:
    """Can a file be made beside ``path`` (where its atomic write puts its temporary file)?
    Asked now, so a long run does not fail at its end. Devices and FIFOs are written
    through, not replaced: nothing to ask."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return
    except OSError:
        pass  # not there yet (or a dangling link): the folder must take a new file
    target = Path(os.path.realpath(path))
    probe = target.with_name(f".{target.name}.{os.getpid()}.probe")
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        raise InputError(f"cannot write {shown(str(path))}: {exc.strerror or exc}", source=where) from None


def check_output_dir(path: str | Path, flag: str | None = None, *, create: bool = True,
                     inputs: Sequence[str | Path] = (), writes: Sequence[str] = ()) -> Path:
    """``path`` as a folder to write into, made unless ``create=False``: refused when it
    is a file, when its nearest existing ancestor is not a writable folder, or when one of
    the command's ``inputs`` (files) is a file the command ``writes`` there (names relative
    to the folder), which it would overwrite. ``create=False`` checks without making it, so
    a run that fails on its inputs leaves no empty folder (the writer makes it when there
    is something to write)."""
    where = flag or str(path)
    if not str(path).strip():
        raise InputError("expected a folder path, got an empty one", source=where)
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{shown(str(path))} is a file; expected a folder", source=where)
    for name in writes:
        given = _input_at(path / name, inputs)
        if given is not None:
            raise InputError(f"{shown(str(given))} is an input and the file this command writes as {shown(name)} in "
                             f"{shown(str(path))}; writing it would overwrite that input: choose another folder",
                             source=where)
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"cannot make folder {shown(str(path))}: {shown(str(ancestor))} is not a writable folder",
                         source=where)
    if not create and ancestor != path:  # ask the folder now (access() says yes to root everywhere)
        probe = ancestor / f".accelsim-probe-{os.getpid()}"
        try:
            probe.mkdir()
            probe.rmdir()
        except OSError as exc:
            raise InputError(f"cannot make folder {shown(str(path))}: {exc.strerror or exc}", source=where) from None
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot make folder {shown(str(path))}: {exc.strerror or exc}", source=where) from None
    return path


def write_text_atomic(path: str | Path, text: str, flag: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically; an unwritable place is one-line bad input
    (the write itself tells: the probe of :func:`check_output_file` is for before the work)."""
    where = flag or str(path)
    given = _output_path(path, where)
    try:
        mode = os.stat(given).st_mode  # follows a symlink
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"cannot write {shown(str(given))}: {exc.strerror or exc}", source=where) from None
    if mode is not None and not stat.S_ISREG(mode):  # a device or FIFO: write through it
        try:
            with open(given, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise InputError(f"cannot write {shown(str(given))}: {exc.strerror or exc}", source=where) from None
        return given
    target = Path(os.path.realpath(given)) if given.is_symlink() else given  # keep the link
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {shown(str(given))}: {exc.strerror or exc}", source=where) from None
    return given


def write_json(path: str | Path, data: Any, flag: str | None = None) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=None, separators=(",", ":")), flag)
