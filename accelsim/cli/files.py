"""Writing output files atomically: nothing half-written if the run stops."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from accelsim.errors import InputError


def write_json(path: str | Path, data: Any) -> Path:
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise InputError(f"folder {str(path.parent)!r} does not exist", source=str(path))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=None, separators=(",", ":")), encoding="utf-8")
    tmp.replace(path)
    return path
