"""``accelsim capture pallas|triton FILE.py:FUNCTION [--param K=V ...] [--compile-for sm_90] [--family NAME]
-o trace.json``."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from accelsim.capture.common import split_target
from accelsim.capture.triton_compile import check_compile_target
from accelsim.errors import InputError, shown
from accelsim.families import FAMILIES
from accelsim.families.base import parse_assignments
from accelsim.files import check_output_file, write_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="make a kernel trace from a real Pallas or Triton kernel, on a CPU")
    p.add_argument("tool", choices=("pallas", "triton"), help="what the kernel is written in")
    p.add_argument("target", metavar="FILE.py:FUNCTION",
                   help="a function that takes the --param values as keyword arguments, builds inputs and calls the kernel")
    p.add_argument("--param", action="append", default=[], metavar="K=V", help="keyword argument for FUNCTION (repeatable)")
    p.add_argument("--launch", type=int, default=None, metavar="N", help="which kernel launch to capture if there are several")
    p.add_argument("--compile-for", metavar="sm_NN",
                   help="Triton: also compile the kernel for this NVIDIA target (sm_80, sm_90, sm_100; no GPU "
                        "needed) and take its shared memory and registers from the compiler")
    p.add_argument("--family", metavar="NAME",
                   help="the built-in kernel family this kernel implements (written as metadata.family): a "
                        "calibrated chip's family_values for it then apply to the trace, as to the family")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json", help="where to write the kernel trace")
    p.set_defaults(run=run_capture, options_of_fields={"compile_for": "--compile-for"})


EXTRAS = {"jax": "jax", "jaxlib": "jax", "triton": "triton", "torch": "triton"}


def run_capture(args: argparse.Namespace) -> int:
    path, function = split_target(args.target)
    params = parse_assignments(args.param, "--param")
    if args.tool == "triton" and args.launch is not None:
        raise InputError("--launch applies to Pallas capture", source="--launch")
    check_compile_target(args.tool, args.compile_for)
    if args.family is not None and args.family not in FAMILIES:
        raise InputError(f"unknown kernel family {shown(args.family)}; expected one of: {', '.join(FAMILIES)}",
                         source="--family")
    check_output_file(args.output, "-o", inputs=[path])  # never over the kernel's own source
    try:
        trace = _capture(args.tool, path, function, params, args.launch, args.compile_for)
    except ValidationError as exc:  # what the kernel launched is not a kernel we can describe (empty arrays)
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(f"the captured launch does not make a valid trace ({where}: {first['msg']}); an empty "
                         "array or a zero size?", source=args.target) from None
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRAS:
            raise
        raise InputError(f"{args.tool} capture needs {top}: pip install -e '.[{EXTRAS[top]}]'",
                         source="capture") from None
    if args.family is not None:
        trace.metadata["family"] = args.family
    write_json(args.output, trace.model_dump(mode="json"), "-o")
    print(f"wrote {args.output}: {trace.kernel.name}, grid {trace.kernel.grid}, {trace.num_programs} programs, "
          f"{len(trace.templates)} templates")
    compiled = trace.metadata.get("compiled")
    if compiled:
        res = trace.kernel.resources
        print(f"compiled for {compiled['target']}: {res.local_memory_bytes} B shared memory, "
              f"{res.registers_per_thread} registers per thread, {compiled['spilled_bytes_per_thread']} B spilled")
    return 0


def _capture(tool: str, path: str, function: str, params: dict, launch: int | None, compile_for: str | None):
    if tool == "pallas":
        from accelsim.capture.pallas import capture_pallas

        return capture_pallas(path, function, params, launch=launch)
    from accelsim.capture.triton import capture_triton

    return capture_triton(path, function, params, compile_for=compile_for)
