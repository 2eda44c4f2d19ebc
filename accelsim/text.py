"""Text fields that accelsim echoes to terminals (names in configs and traces)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from accelsim.errors import check_path_text, shown


def _printable(name: str) -> str:
    if not name.isprintable():
        raise ValueError(f"expected printable text, got {shown(name)}")  # it is echoed to terminals
    return name


PrintableText = Annotated[str, AfterValidator(_printable)]
"""Text that is echoed to terminals (names): no control characters or lone surrogates."""
PathText = Annotated[str, AfterValidator(check_path_text)]
"""A file path an input names: printable text (a NUL byte is in no file's name)."""
