"""The validation scripts are not a package: make ``validation/`` and ``validation/reference/``
importable for these tests."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VALIDATION = REPO / "validation"

for folder in (VALIDATION, VALIDATION / "reference"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
