"""Where and how a measurement was taken: device state, date, command, library versions.

Shared by the measurement scripts (``measure_gpu.py``, ``measure_pallas.py``,
``measure_collectives.py``). Standard library only, like ``measurement_format.py``:
it runs on a bare device machine and never imports accelsim. Everything here reads;
nothing sets a clock, a power limit or any other device setting.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform
import shlex
import subprocess
import sys
from pathlib import Path

NVIDIA_SMI_FIELDS = (
    "name", "driver_version", "pstate", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
    "clocks.applications.graphics", "power.draw", "power.limit", "temperature.gpu", "utilization.gpu",
    "memory.used", "memory.total", "clocks_event_reasons.active",
)


def _nvidia_smi(fields: tuple[str, ...]) -> list[str] | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return [v.strip() for v in done.stdout.splitlines()[0].split(",")]


@functools.cache
def _known_nvidia_smi_fields() -> tuple[str, ...]:
    """The fields of NVIDIA_SMI_FIELDS this driver's nvidia-smi answers (one bad name fails a whole query)."""
    if _nvidia_smi(NVIDIA_SMI_FIELDS) is not None:
        return NVIDIA_SMI_FIELDS
    return tuple(name for name in NVIDIA_SMI_FIELDS if _nvidia_smi((name,)) is not None)


def read_gpu_state() -> dict | None:
    """One nvidia-smi reading of the first GPU's clocks, power and temperature; ``None`` without nvidia-smi."""
    fields = _known_nvidia_smi_fields()
    values = _nvidia_smi(fields) if fields else None
    if values is None or len(values) != len(fields):
        return None
    return dict(zip(fields, values))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def now_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def command_line(argv: list[str] | None) -> str:
    """The command as run (``argv`` given: an in-process call, recorded as its arguments)."""
    return shlex.join([Path(sys.executable).name, *sys.argv]) if argv is None else shlex.join(argv)


def suite_parser(description: str, out_help: str, devices: tuple[str, ...] = ("auto", "gpu", "cpu")) -> argparse.ArgumentParser:
    """The options every child suite of ``measure_gpu.py`` takes (it passes them on)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", choices=devices, default="auto")
    parser.add_argument("--quick", action="store_true", help="a few cases (smoke run)")
    parser.add_argument("--budget-s", type=float, default=None, help="stop starting cases when this is nearly spent")
    parser.add_argument("--out", type=Path, required=True, help=out_help)
    return parser


def module_versions(*names: str) -> dict:
    """``{name: version}`` of importable modules; ``None`` for absent or broken ones."""
    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in names:
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # an optional package: absent or broken is the same to us
            versions[name] = None
    return versions
