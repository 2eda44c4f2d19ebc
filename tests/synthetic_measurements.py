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
    cases = [(f"rmsnorm-{rows}x{cols}", {"rows": rows, "cols": cols, "dtype": "bf16"}) for rows, cols in shapes]
    return write_synthetic(path, "rmsnorm", cases, overrides, factor)


def write_stream(path: Path, overrides: Sequence[str], sizes: Sequence[tuple[int, int, int]],
                 factor: Callable[[int], float] = lambda i: 1.0) -> list[dict]:
    """fp32 STREAM-like kernels (a microbenchmark-level family, which calibrate fits on) at
    each (elements, inputs, outputs), timed as h100-sxm with ``overrides`` predicts them,
    times ``factor(i)``; written to ``path``; the records are returned."""
    cases = [(f"stream-{inputs}in{outputs}out-{elements}",
              {"elements": elements, "dtype": "fp32", "inputs": inputs, "outputs": outputs})
             for elements, inputs, outputs in sizes]
    return write_synthetic(path, "elementwise", cases, overrides, factor)


def write_synthetic(path: Path, family_name: str, cases: Sequence[tuple[str, dict]], overrides: Sequence[str],
                    factor: Callable[[int], float] = lambda i: 1.0) -> list[dict]:
    """Records of ``family_name`` with the given (id, params), each timed as h100-sxm with
    ``overrides`` predicts it at its best config, times ``factor(i)``; written to ``path``."""
    chip = load_arch("h100-sxm", list(overrides))
    family = get_family(family_name)
    records = []
    for i, (record_id, params) in enumerate(cases):
        best = autotune(family, parse_values(family.params, params, "test"), chip)[0]
        records.append({"id": record_id, "family": family_name, "implementation": "synthetic",
                        "params": params, "config": best.config, "latency_s": best.sim.latency_s * factor(i),
                        "source": "accelsim itself"})
    path.write_text(json.dumps({"schema_version": 1, "kind": "measurements", "family": family_name,
                                "device": {"name": "synthetic", "arch": "h100-sxm"},
                                "provenance": {"date": None, "command": "test", "versions": {}, "clocks": None,
                                               "source": "synthetic: accelsim's own predictions"},
                                "records": records}))
    return records
