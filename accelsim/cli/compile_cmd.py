"""``accelsim compile tpu FILE.py:FUNCTION --topology v5p:4x4x4 [--mesh data=16,model=4] [--param K=V ...]
-o step.hlo.txt``: the TPU compiler's scheduled HLO of a JAX program, on a CPU."""

from __future__ import annotations

import argparse

from accelsim.capture.common import split_target, typed_params
from accelsim.errors import InputError
from accelsim.families.base import parse_assignments
from accelsim.files import check_output_file, write_text_atomic
from accelsim.units import format_quantity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="compile a JAX program for a TPU topology without a TPU (needs libtpu: "
                                       "pip install -e '.[tpu]') and write its scheduled HLO for 'import hlo'")
    p.add_argument("target_kind", choices=("tpu",), metavar="tpu", help="what to compile for (tpu)")
    p.add_argument("target", metavar="FILE.py:FUNCTION",
                   help="a function taking (mesh, **params) that returns jax.jit(f).lower(...) on that mesh")
    p.add_argument("--topology", required=True, metavar="GEN:AxB[xC]",
                   help="the TPU slice: v4, v5e, v5p or v6e and its chips per axis (v5e:4x4, v5p:4x4x4)")
    p.add_argument("--mesh", metavar="AXIS=N,...",
                   help="named mesh axes over the devices, major first (default: data=<all devices>)")
    p.add_argument("--param", action="append", default=[], metavar="K=V", help="keyword argument for FUNCTION (repeatable)")
    p.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="an XLA compiler option, e.g. xla_tpu_enable_windowed_einsum_for_all_gather=true (repeatable)")
    p.add_argument("-o", "--output", required=True, metavar="STEP.hlo.txt",
                   help="where to write the HLO text")
    p.set_defaults(run=run_compile, options_of_fields={"topology": "--topology", "mesh": "--mesh"})


def run_compile(args: argparse.Namespace) -> int:
    from accelsim.capture.tpu_compile import compile_for_tpu, parse_topology

    path, function = split_target(args.target)
    topology = parse_topology(args.topology)
    params = typed_params(parse_assignments(args.param, "--param"))
    options = parse_assignments(args.option, "--option")
    check_output_file(args.output, "-o", inputs=[path])
    try:
        compiled = compile_for_tpu(path, function, params, topology, args.mesh, options)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("jax", "jaxlib", "numpy"):
            raise
        raise InputError("compiling for a TPU needs jax and libtpu: pip install -e '.[tpu]'", source="compile") from None
    write_text_atomic(args.output, compiled.hlo_text, "-o")
    versions = ", ".join(f"{k} {v}" for k, v in compiled.versions.items())
    print(f"wrote {args.output}: {topology.name}, {compiled.devices} devices, {len(compiled.hlo_text.splitlines())} "
          f"lines of HLO ({versions})")
    cost = compiled.cost_analysis
    if cost:
        print(f"XLA's cost analysis (per device, loop bodies once): {cost.get('flops', 0):.4g} flops, "
              f"{format_quantity(cost.get('bytes accessed', 0), 'bytes')} accessed")
    return 0
