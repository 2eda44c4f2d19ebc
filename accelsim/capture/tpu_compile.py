"""Compile a JAX program for a TPU topology on a machine without a TPU (ahead of time).

With libtpu installed (``pip install -e '.[tpu]'``: jax 0.10.2 with libtpu 0.0.42.1), JAX
describes a TPU slice it cannot reach (``jax.experimental.topologies.get_topology_desc``)
and the real TPU compiler compiles for its devices: ``jit(f).lower(...).compile()`` then
prints scheduled TPU HLO (async collective fusions, memory spaces, tiled layouts, XLA's
estimated cycles) that ``accelsim import hlo`` reads.

Convention: ``FUNCTION(mesh, **params)`` gets a ``jax.sharding.Mesh`` over the topology's
devices (axes from ``--mesh``) and the ``--param`` values, and returns the lowered program
(``jax.jit(f).lower(*args)``, its arguments ``jax.ShapeDtypeStruct`` with
``NamedSharding`` s on ``mesh``) or the compiled one.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from accelsim.capture.common import load_function
from accelsim.errors import InputError, shown

GENERATIONS = ("v4", "v5e", "v5p", "v6e")
"""TPU generations libtpu 0.0.42.1 compiles for by name (``v5e:4x4``, ``v5p:4x4x4``)."""
MAX_CHIPS = 8960
"""The largest single slice named here (a v5p pod); larger topologies are refused up front."""
MAX_MESH_AXES = 8
_TOPOLOGY = re.compile(r"(v\w+):(\d{1,12}(?:x\d{1,12}){1,2})")
_AXIS = re.compile(r"([A-Za-z_]\w*)=(\d{1,12})")
"""Sizes of at most 12 digits: past every bound, yet never past what ``int()`` converts
(4,300 digits), so a long number is refused in one line, not a ValueError traceback."""


@dataclass(frozen=True)
class Topology:
    """A TPU slice by name: generation and chips along each torus axis."""

    generation: str
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.generation}:{'x'.join(map(str, self.shape))}"

    @property
    def chips(self) -> int:
        return math.prod(self.shape)

    @property
    def chips_per_host_bounds(self) -> tuple[int, int, int]:
        """Hosts of 2x2 chips (4 chips; smaller slices one host), as Cloud TPU hosts hold."""
        padded = (*self.shape, 1, 1)[:3]
        return min(2, padded[0]), min(2, padded[1]), 1


@dataclass(frozen=True)
class CompiledProgram:
    """What the TPU compiler made: the scheduled HLO text and XLA's own summary of it."""

    hlo_text: str
    devices: int
    cost_analysis: dict[str, float]
    versions: dict[str, str]


def parse_topology(text: str) -> Topology:
    m = _TOPOLOGY.fullmatch(text.strip())
    if m is None or m.group(1) not in GENERATIONS:
        raise InputError(f"expected a TPU topology GEN:AxB or GEN:AxBxC with GEN one of {', '.join(GENERATIONS)} "
                         f"(e.g. v5e:4x4, v5p:4x4x4), got {shown(text[:40])}", field="topology")
    shape = tuple(int(d) for d in m.group(2).split("x"))
    if not all(1 <= d <= MAX_CHIPS for d in shape) or math.prod(shape) > MAX_CHIPS:
        raise InputError(f"expected at most {MAX_CHIPS} chips with every axis >= 1, got {shown(text[:40])}",
                         field="topology")
    return Topology(m.group(1), shape)


def parse_mesh(text: str | None, devices: int) -> tuple[tuple[str, int], ...]:
    """``data=4,model=4`` -> axes; their sizes must multiply to ``devices``. Default: one
    axis ``data`` over every device."""
    if text is None:
        return (("data", devices),)
    axes: list[tuple[str, int]] = []
    for part in text.split(","):
        m = _AXIS.fullmatch(part.strip())
        if m is None:
            raise InputError(f"expected NAME=SIZE axes separated by commas (data=4,model=4), got {shown(part[:40])}",
                             field="mesh")
        axes.append((m.group(1), int(m.group(2))))
    names = [name for name, _ in axes]
    if len(axes) > MAX_MESH_AXES or len(set(names)) != len(names):
        raise InputError(f"expected at most {MAX_MESH_AXES} axes, each named once, got {shown(text[:60])}",
                         field="mesh")
    if math.prod(size for _, size in axes) != devices:
        raise InputError(f"the mesh's axes multiply to {math.prod(size for _, size in axes)} but the topology has "
                         f"{devices} devices", field="mesh")
    return tuple(axes)


def compile_for_tpu(path: str, function: str, params: dict[str, Any], topology: Topology,
                    mesh_text: str | None, compiler_options: dict[str, str] | None = None) -> CompiledProgram:
    """Compile ``FUNCTION(mesh, **params)`` for ``topology``; needs libtpu."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    fn = load_function(path, function)
    devices = _topology_devices(topology)
    axes = parse_mesh(mesh_text, len(devices))
    mesh = Mesh(np.array(devices).reshape([size for _, size in axes]), tuple(name for name, _ in axes))
    try:
        staged = fn(mesh, **params)
    except InputError:
        raise
    except Exception as exc:  # the user's function failed: say where, not a traceback
        raise InputError(f"{function} failed: {type(exc).__name__}: {str(exc)[:200]}", source=path) from None
    if isinstance(staged, jax.stages.Lowered):
        with _quiet_libtpu():
            staged = _compile(staged, compiler_options, path)
    if not isinstance(staged, jax.stages.Compiled):
        raise InputError(f"{function} returned {type(staged).__name__}; expected jax.jit(f).lower(...) "
                         "(a jax.stages.Lowered) or its .compile()", source=path)
    analysis = staged.cost_analysis() or {}
    costs = {k: float(v) for k, v in analysis.items() if k in ("flops", "bytes accessed", "transcendentals",
                                                                "optimal_seconds")}
    return CompiledProgram(staged.as_text(), len(devices), costs, _versions())


def _compile(lowered, compiler_options: dict[str, str] | None, path: str):
    try:
        return lowered.compile(compiler_options=compiler_options or None)
    except Exception as exc:  # the TPU compiler refused the program or an option
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"the TPU compiler failed: {first[:240]}", source=path) from None


def _topology_devices(topology: Topology) -> list:
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")  # no TPU here: never ask a cloud metadata server
    # libtpu takes /tmp/libtpu_lockfile to keep a TPU to one process; describing a slice
    # claims no TPU, so compiles may run side by side (two at once otherwise abort)
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    from jax.experimental import topologies

    try:
        with _quiet_libtpu():
            desc = topologies.get_topology_desc(platform="tpu", topology_name=topology.name,
                                                chip_config_name="default",
                                                chips_per_host_bounds=topology.chips_per_host_bounds, num_slices=1)
    except RuntimeError as exc:
        text = str(exc)
        if "not installed" in text:
            raise InputError("compiling for a TPU needs libtpu: pip install -e '.[tpu]' (jax 0.10.2 with libtpu "
                             "0.0.42.1)", source="compile") from None
        raise InputError(f"libtpu refused the topology: {text.strip().splitlines()[0][:200]}",
                         field="topology") from None
    return list(desc.devices)


@contextlib.contextmanager
def _quiet_libtpu() -> Iterator[None]:
    """libtpu writes warnings about the TPU hosts it cannot find straight to file
    descriptor 2 (harmless here: nothing runs); keep them off the terminal."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for package in ("jax", "jaxlib", "libtpu"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out
