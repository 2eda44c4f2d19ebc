"""Where and how a measurement was taken: device state, date, command, library versions.

Shared by the measurement scripts (``measure_gpu.py``, ``measure_pallas.py``,
``measure_collectives.py``). Standard library only, like ``measurement_format.py``:
it runs on a bare device machine and never imports accelsim. Everything here reads;
nothing sets a clock, a power limit or any other device setting.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import functools
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
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


NVML_CLOCK_SM = 1
"""``nvmlClockType_t``'s SM clock (``NVML_CLOCK_SM`` in ``nvml.h``)."""


def nvml_sm_clock(pci_bus_id: str | None = None) -> Callable[[], float | None] | None:
    """A reader of a GPU's current SM clock in MHz through NVML (``libnvidia-ml``, the
    library ``nvidia-smi`` reads; loaded with ctypes, so no Python package is needed): the
    GPU at ``pci_bus_id`` (``domain:bus:device.function``, hex), or without one the only
    GPU NVML sees (NVML numbers GPUs its own way, not as ``CUDA_VISIBLE_DEVICES`` does, so
    with several and no bus id it does not guess). ``None`` where NVML is missing, the GPU
    is not found or it answers nothing. It only reads."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() != 0:
            return None
        handle = ctypes.c_void_p()
        if pci_bus_id:
            found = nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle))
        else:
            count = ctypes.c_uint()
            if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0 or count.value != 1:
                return None
            found = nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
        if found != 0:
            return None
    except (OSError, AttributeError):
        return None
    clock = ctypes.c_uint()

    def read() -> float | None:
        return float(clock.value) if nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(clock)) == 0 else None

    return read if read() is not None else None


class ClockSampler:
    """The SM clock while something runs: :meth:`during` reads ``read`` (MHz; None when
    unreadable) every ``period_s`` on a thread, and the clock a case ran at is the median
    of what it read then (:func:`clock_summary`). Boost clocks move with load, power and
    temperature, so one reading before a family says little about a case within it."""

    def __init__(self, read: Callable[[], float | None] | None, period_s: float = 0.005) -> None:
        self.read = read
        self.period_s = period_s

    @contextlib.contextmanager
    def during(self) -> Iterator[list[float]]:
        """Readings taken while the ``with`` body runs (empty without a reader), filled in
        when it ends; at least one, taken at its end, when a reader exists."""
        readings: list[float] = []
        if self.read is None:
            yield readings
            return
        stop = threading.Event()
        taken: list[float] = []

        def poll() -> None:
            while not stop.is_set():
                value = self.read()
                if value is not None:
                    taken.append(value)
                stop.wait(self.period_s)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield readings
        finally:
            stop.set()
            thread.join()
            if not taken and (value := self.read()) is not None:
                taken.append(value)
            readings.extend(taken)


def clock_summary(readings: list[float]) -> dict | None:
    """``{median, min, max, readings}`` of SM clock readings in MHz; None without any."""
    if not readings:
        return None
    return {"median": statistics.median(readings), "min": min(readings), "max": max(readings),
            "readings": len(readings)}


def clock_fields(summary: dict | None) -> dict:
    """A record's ``sm_clock_mhz`` (:func:`clock_summary`; accelsim's ``validate`` and
    ``calibrate`` predict the record at its median unless told a clock); nothing when no
    reading was taken."""
    return {"sm_clock_mhz": summary} if summary else {}


def clock_note(summary: dict | None) -> str:
    """What a record's notes say of its clock readings ('' without any)."""
    if not summary:
        return ""
    return (f"; SM clock {summary['median']:.0f} MHz during the timed calls (median of {summary['readings']} NVML "
            f"readings, {summary['min']:.0f}-{summary['max']:.0f})")


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


def budget_seconds(text: str) -> float:
    """``--budget-s``: seconds above zero (argparse type: anything else is one line, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, got {text!r}")
    return value


def out_folder(text: str) -> Path:
    """``--out``: a folder that is, or can be made (argparse type: checked before any measuring)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file; expected a folder")
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot make folder {text!r}: {str(ancestor)!r} is not a writable folder")
    return path


def suite_parser(description: str, out_help: str, devices: tuple[str, ...] = ("auto", "gpu", "cpu")) -> argparse.ArgumentParser:
    """The options every child suite of ``measure_gpu.py`` takes (it passes them on)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", choices=devices, default="auto")
    parser.add_argument("--quick", action="store_true", help="a few cases (smoke run)")
    parser.add_argument("--budget-s", type=budget_seconds, default=None,
                        help="stop starting cases when this is nearly spent")
    parser.add_argument("--out", type=out_folder, required=True, help=out_help)
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
