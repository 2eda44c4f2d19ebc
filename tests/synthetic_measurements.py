"""Measurement files 'measured' by accelsim itself on a chip whose values the test knows."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.base import parse_values
from accelsim.families.search import autotune


def write_rmsnorm(path: Path, overrides: Sequence[str], shapes: Sequence[tuple[int, int]],
                  factor: Callable[[int], float] = lambda i: 1.0) -> list[dict]:
    """bf16 rmsnorm at each (rows, cols), timed as h100-sxm with ``overrides`` predicts it at its
    best config, times ``factor(i)``; written to ``path``; the records are returned."""
    chip = load_arch("h100-sxm", list(overrides))
    family = get_family("rmsnorm")
    records = []
    for i, (rows, cols) in enumerate(shapes):
        params = {"rows": rows, "cols": cols, "dtype": "bf16"}
        best = autotune(family, parse_values(family.params, params, "test"), chip)[0]
        records.append({"id": f"rmsnorm-{rows}x{cols}", "family": "rmsnorm", "implementation": "synthetic",
                        "params": params, "config": best.config, "latency_s": best.sim.latency_s * factor(i),
                        "source": "accelsim itself"})
    path.write_text(json.dumps({"schema_version": 1, "kind": "measurements", "family": "rmsnorm",
                                "device": {"name": "synthetic", "arch": "h100-sxm"},
                                "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None,
                                               "source": "synthetic: accelsim's own predictions"},
                                "records": records}))
    return records
