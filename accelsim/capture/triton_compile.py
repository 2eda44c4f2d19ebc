"""Compile a captured Triton launch for a real NVIDIA GPU, on the CPU, and read what it needs.

Triton's compiler runs without a GPU: ``triton.compile`` lowers the kernel through
TTIR, TTGIR, LLVM IR and PTX to a cubin with the ``ptxas`` its wheel ships. This module
compiles the launch a capture saw, with the same arguments (so the same integer and
alignment specialisation as on a GPU) and the same ``num_warps`` / ``num_stages`` and
constexprs, for a target such as ``sm_90``, and returns the compiler's own figures:
the shared memory a program allocates (``metadata.shared`` plus the cubin's static
shared memory) and the registers per thread and spilled bytes per thread that
``cuobjdump --dump-resource-usage`` reports. These replace the capture's estimates, so
occupancy and "does this config fit" come from the compiler instead of a rule of thumb.

It uses Triton's own argument binder (``create_function_from_signature`` and
``JITFunction._pack_args``), which is internal API: the version the tests were checked
with is pinned in ``pyproject.toml``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from accelsim.errors import InputError, shown

TARGET_PATTERN = re.compile(r"^sm_(\d{2,3})a?$")
RESOURCE_PATTERN = re.compile(r"\b(REG|SHARED|LOCAL|STACK):(\d+)")


@dataclass(frozen=True, kw_only=True)
class KernelCall:
    """What a Triton launch was called with: the kernel's Python function (undecorated;
    the compiler finds its ``@triton.jit`` object by name in the function's file) and
    the launch's arguments."""

    fn: Callable
    args: tuple
    kwargs: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class CompiledResources:
    target: str
    shared_memory_bytes: int
    """Dynamic shared memory Triton launches the kernel with plus the cubin's static."""
    registers_per_thread: int
    spilled_bytes_per_thread: int
    """Local memory per thread (register spills and stack), from cuobjdump."""
    num_warps: int
    num_stages: int
    triton_version: str

    def as_dict(self) -> dict:
        return {
            "target": self.target, "shared_memory_bytes": self.shared_memory_bytes,
            "registers_per_thread": self.registers_per_thread,
            "spilled_bytes_per_thread": self.spilled_bytes_per_thread, "num_warps": self.num_warps,
            "num_stages": self.num_stages, "compiler": f"triton {self.triton_version} + ptxas",
        }


def parse_target(text: str) -> int:
    """``sm_90`` / ``sm_90a`` / ``sm_80`` / ``sm_100`` -> the compute capability (90)."""
    match = TARGET_PATTERN.match(text.strip())
    if not match:
        raise InputError(f"expected an NVIDIA target such as sm_80, sm_90 or sm_100, got {shown(text)}", field="compile_for")
    return int(match.group(1))


def check_compile_target(tool: str, target: str | None) -> None:
    """A compile target (the CLI's ``--compile-for``): only Triton capture compiles, and the
    target must parse; errors name the field ``compile_for``."""
    if target is None:
        return
    if tool != "triton":
        raise InputError(f"applies to Triton capture only, not {tool}", field="compile_for")
    parse_target(target)


def compile_call(call: KernelCall, target: str, source: str) -> CompiledResources:
    """Compile ``call`` for ``target`` (``sm_90``) and read its resources.

    The compiler runs in a fresh Python process: a capture runs with Triton in
    interpreter mode, where Triton's own library functions (``tl.cdiv``, ...) are
    interpreter objects the compiler cannot lower. Raises :class:`InputError` naming
    ``source`` when the compiler rejects the kernel (an unsupported dot shape, a config
    the target cannot hold) or cannot run."""
    parse_target(target)
    request = {"file": inspect.getsourcefile(call.fn), "kernel": call.fn.__name__, "target": target,
               "args": [_encode(a, source) for a in call.args],
               "kwargs": {k: _encode(v, source) for k, v in call.kwargs.items()}}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    try:
        done = subprocess.run([sys.executable, "-m", "accelsim.capture.triton_compile"], input=json.dumps(request),
                              check=False, capture_output=True, text=True, env=env, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InputError(f"compiling {call.fn.__name__} for {target} took over {COMPILE_TIMEOUT_S} s",
                         source=source) from None
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"compiling {call.fn.__name__} for {target} failed: {tail}", source=source) from None
    if "error" in answer:
        raise InputError(answer["error"], source=source)
    return CompiledResources(**answer)


COMPILE_TIMEOUT_S = 600


def _encode(value: Any, source: str) -> dict:
    """A launch argument as the compiler's specialisation sees it: a tensor's dtype and
    16-byte alignment, a scalar's value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return {"tensor": str(value.dtype).removeprefix("torch."), "aligned": value.data_ptr() % 16 == 0}
    raise InputError(f"cannot hand a {type(value).__name__} launch argument to the compiler", source=source)


def _decode(item: dict) -> Any:
    if "tensor" not in item:
        return item["value"]
    import torch

    base = torch.empty(64, dtype=getattr(torch, item["tensor"]))
    return base if item["aligned"] else base[1:]


def _compile_in_this_process(request: dict) -> CompiledResources:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    from accelsim.capture.common import load_function

    target, name = request["target"], request["kernel"]
    kernel = load_function(request["file"], name)
    while not isinstance(kernel, JITFunction) and hasattr(kernel, "fn"):  # @autotune, @heuristics
        kernel = kernel.fn
    if not isinstance(kernel, JITFunction):
        raise InputError(f"{name} in {request['file']} is not a @triton.jit kernel", source=request["file"])
    args = [_decode(a) for a in request["args"]]
    kwargs = {k: _decode(v) for k, v in request["kwargs"].items()}
    gpu = GPUTarget("cuda", parse_target(target), 32)
    try:
        backend = make_backend(gpu)
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
        compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=gpu,
                                  options=options.__dict__)
    except Exception as exc:  # the compiler's own message says what it rejected
        text = str(exc).strip()
        detail = text.splitlines()[-1] if text else type(exc).__name__
        raise InputError(f"compiling {name} for {target} failed: {type(exc).__name__}: {detail}",
                         source=request["file"]) from None
    usage = _resource_usage(compiled.asm["cubin"], request["file"])
    return CompiledResources(
        target=target, shared_memory_bytes=int(compiled.metadata.shared) + usage.get("SHARED", 0),
        registers_per_thread=usage.get("REG", 0),
        spilled_bytes_per_thread=usage.get("LOCAL", 0) + usage.get("STACK", 0),
        num_warps=int(compiled.metadata.num_warps), num_stages=int(compiled.metadata.num_stages),
        triton_version=triton.__version__,
    )


def _resource_usage(cubin: bytes, source: str) -> dict[str, int]:
    """REG, SHARED (static), LOCAL and STACK of the cubin's kernel, from cuobjdump."""
    tool = _cuobjdump()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            out = subprocess.run([tool, "--dump-resource-usage", path], capture_output=True, text=True, check=True,
                                 timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            raise InputError(f"cannot read the cubin's resource usage with {tool}: {exc}", source=source) from None
    function = [line for line in out.splitlines() if "REG:" in line]
    if not function:
        raise InputError(f"cuobjdump reported no function resource usage:\n{out.strip()}", source=source)
    return {key: int(value) for key, value in RESOURCE_PATTERN.findall(function[0])}


def _cuobjdump() -> str:
    from triton import knobs

    try:
        return knobs.nvidia.cuobjdump.path
    except (AttributeError, RuntimeError):
        import triton

        return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def main() -> int:
    """Worker: one JSON request on stdin, one JSON line on stdout (the resources, or
    ``{"error": ...}``)."""
    request = json.loads(sys.stdin.read())
    try:
        answer = dataclasses.asdict(_compile_in_this_process(request))
    except InputError as exc:
        answer = {"error": exc.message}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
