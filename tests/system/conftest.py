"""Building small system traces in tests, and the systems they replay on."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.system.trace import SystemTrace, parse_system_trace


def spmd(ops: list[dict], devices: str = "0-7", num_devices: int = 8) -> SystemTrace:
    """One program run by ``devices``."""
    return programs([{"name": "spmd", "devices": [devices], "ops": ops}], num_devices)


def programs(progs: list[dict], num_devices: int = 8) -> SystemTrace:
    return parse_system_trace({"schema_version": 1, "num_devices": num_devices, "programs": progs}, "test.json")


def compute(name: str, seconds: float, **extra) -> dict:
    return {"name": name, "kind": "compute", "duration_s": seconds, **extra}


@pytest.fixture(scope="session")
def dgx():
    return load_arch("dgx-h100-published")  # NCCL's table figures: what these mechanism tests were sized on
