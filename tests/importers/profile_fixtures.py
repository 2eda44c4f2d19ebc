"""The profiler-trace fixtures (``fixtures/profiles``) and a measured step made from one."""

from __future__ import annotations

import sys
from pathlib import Path

PROFILES = Path(__file__).resolve().parent / "fixtures" / "profiles"
KINETO_H100 = PROFILES / "kineto_h100_tp2_block.json"
TORCH_CPU = PROFILES / "torch_cpu_block.json"
JAX_CPU = PROFILES / "jax_cpu_mlp.trace.json.gz"
JAX_CPU_HLO = PROFILES / "jax_cpu_mlp.hlo.txt"
NSYS_SQL = PROFILES / "nsys_h100_tp2_block.sql"


def nsys_sqlite(tmp_path: Path) -> Path:
    """The Nsight Systems fixture as the SQLite file nsys export writes."""
    sys.path.insert(0, str(PROFILES))
    try:
        from make_fixtures import sqlite_from_sql
    finally:
        sys.path.remove(str(PROFILES))
    return sqlite_from_sql(NSYS_SQL, tmp_path / "nsys_h100_tp2_block.sqlite")
