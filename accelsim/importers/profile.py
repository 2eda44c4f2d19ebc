"""``accelsim import profile TRACE -o STEP.json``: a profiled run (PyTorch profiler, JAX
profiler, Nsight Systems export) as a *measured step*: every kernel it timed, mapped to a
kernel family and implementation (:mod:`accelsim.importers.profile_kernels`), measurement
records of the kernels whose launching op's shapes give their family's parameters
(``docs/measurement-format.md``), and the kernels no rule maps, with their share of the
measured time. ``accelsim validate --measurements STEP.json`` checks the records and
replays the step beside the measurement (``docs/import-profile.md``).

The measured step (``kind: measured_step``, ``schema_version`` 1) is what is written; the
system trace of the same step (:func:`step_trace`: each kernel an op on its stream, a
family op where the kernel has a record, its measured time otherwise) is checked as every
importer's trace is, and rebuilt from the file by whoever replays it.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelsim.errors import InputError, shown
from accelsim.families import get_family
from accelsim.importers import Imported, Importer
from accelsim.importers.profile_events import DeviceEvent, Profile, read_trace_bytes
from accelsim.importers.profile_kernels import Mapped, classify, short_name
from accelsim.importers.profile_params import FAMILY_PARAMS, typed
from accelsim.system.trace import SystemTrace

STEP_KIND = "measured_step"
STEP_SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"
SAME_INSTANT_S = 1e-9
"""Times closer than a nanosecond (the profilers' resolution) are the same instant: a kernel
that starts as another ends started after it."""
MAX_OP_NAME_CHARS = 120
"""A replayed op's name: its index and the kernel's short name, cut (the full name is in the step)."""


def read_profile(path: str | Path, hlo: str | None = None) -> Profile:
    """The trace at ``path``, whichever tool wrote it: an Nsight Systems SQLite export, or
    Chrome trace JSON from the PyTorch or JAX profiler (gzipped or not). ``hlo``: the HLO
    text of a JAX program, whose shapes its XLA ops take."""
    from accelsim.importers.profile_chrome import read_chrome
    from accelsim.importers.profile_nsys import read_nsys

    if str(path).endswith(".xplane.pb"):
        raise InputError("an XProf .xplane.pb is protobuf, which accelsim has no reader for: give the "
                         "*.trace.json.gz that jax.profiler.trace writes beside it", source=str(path))
    with open_or_fail(path) as head:
        magic = head.read(len(SQLITE_MAGIC))
    profile = read_nsys(path) if magic == SQLITE_MAGIC else read_chrome(path)
    if hlo is not None:
        from accelsim.importers.profile_hlo import with_hlo_shapes

        profile = with_hlo_shapes(profile, hlo)
    return profile


def open_or_fail(path: str | Path):
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read profiler trace: {exc.strerror or exc}", source=str(path)) from None


# ---------------------------------------------------------------- kernels -> records


def impl_modelled(family: str, impl: str | None) -> bool:
    """Whether the family's ``impl`` parameter names ``impl`` (None: the family has one
    implementation, or the record names none)."""
    param = next((p for p in get_family(family).params if p.name == "impl"), None)
    return impl is None or param is None or impl in (param.choices or ())


def describe(event: DeviceEvent) -> dict[str, Any]:
    """One kernel of the step: what it is, when it ran, what launched it and how it maps."""
    op = event.ops[0] if event.ops else None
    mapped = classify(event.name, tuple(o.name for o in event.ops))
    if mapped is None and event.hlo_class is not None:  # the HLO says what an XLA op is
        mapped = Mapped(event.hlo_class, None, "main", None)
    entry: dict[str, Any] = {
        "name": event.name, "kind": event.kind, "stream": event.stream, "start_s": event.start_s,
        "duration_s": event.duration_s, "grid": list(event.grid) if event.grid else None,
        "block": list(event.block) if event.block else None, "op": op.name if op else event.hlo_op,
        "input_dims": [list(d) if d is not None else None for d in op.dims] if op else None,
        "input_types": list(op.types) if op else None,
        "class": mapped.kernel_class if mapped else None, "impl": mapped.impl if mapped else None,
        "rule": mapped.rule if mapped else None, "params": None, "why_no_params": None,
    }
    if event.bytes is not None:
        entry["bytes"] = event.bytes
    if mapped is None:
        entry["why_no_params"] = "no rule maps this kernel name"
    elif mapped.role != "main":
        entry["why_no_params"] = f"a part of a {mapped.kernel_class} call (the family models it inside the call)"
    elif mapped.kernel_class not in FAMILY_PARAMS:
        entry["why_no_params"] = f"{mapped.kernel_class}: no kernel family models it"
    elif not impl_modelled(mapped.kernel_class, mapped.impl):
        entry["why_no_params"] = f"the {mapped.kernel_class} family has no model of {mapped.impl}"
    else:
        from_hlo = event.params is not None and event.hlo_class == mapped.kernel_class
        found = event.params if from_hlo else FAMILY_PARAMS[mapped.kernel_class](typed(event))
        if isinstance(found, str):
            entry["why_no_params"] = found
        else:
            entry["params"] = {**found, **({"impl": mapped.impl} if _takes_impl(mapped) else {})}
    return entry


def _takes_impl(mapped) -> bool:
    return mapped.impl is not None and any(p.name == "impl" for p in get_family(mapped.kernel_class).params)


def record_id(family: str, params: dict[str, Any]) -> str:
    """A readable id in the measurement files' style (``gemm-bf16-8192x6144x4096``,
    ``attention-fwd-bf16-b4-h16-q2048-kv2048-d128-causal``), then ``--`` and the implementation."""
    p = params
    if family == "gemm":
        text = f"gemm-{p['dtype']}-{p['M']}x{p['N']}x{p['K']}" + (f"-b{p['batch']}" if p["batch"] != 1 else "")
    elif family == "attention":
        heads = f"h{p['heads']}" + (f"kv{p['kv_heads']}" if p["kv_heads"] != p["heads"] else "")
        text = (f"attention-{p['pass']}-{p['dtype']}-b{p['batch']}-{heads}-q{p['seq_q']}-kv{p['seq_kv']}-"
                f"d{p['head_dim']}" + ("-causal" if p["causal"] else ""))
    elif family in ("layernorm", "rmsnorm", "softmax"):
        text = f"{family}-{p['dtype']}-{p['rows']}x{p['cols']}"
    elif family == "elementwise":
        text = f"elementwise-{p['dtype']}-{p['elements']}-{p['inputs']}r{p['outputs']}w"
    else:
        text = f"{family}-" + "-".join(str(v) for k, v in p.items() if k != "impl")
    return text + (f"--{p['impl']}" if "impl" in p else "")


def records_of(kernels: list[dict], source: str, tool: str, device_name: str) -> list[dict]:
    """One measurement record per family, parameters and kernel name: the median of its
    launches' device times, every launch a sample (``latency_kind: device``)."""
    groups: dict[tuple, list[int]] = {}
    for i, k in enumerate(kernels):
        if k["params"] is not None:
            groups.setdefault((k["class"], json.dumps(k["params"], sort_keys=True), k["name"]), []).append(i)
    out, seen = [], {}
    for (family, _, name), members in sorted(groups.items(), key=lambda g: g[1][0]):
        samples = [kernels[i]["duration_s"] for i in members]
        latency = statistics.median(samples)
        if latency < 1e-9:
            for i in members:
                kernels[i]["params"] = None
                kernels[i]["why_no_params"] = "below the profiler's resolution (0 ns)"
            continue
        params = kernels[members[0]]["params"]
        base = record_id(family, params)
        seen[base] = seen.get(base, 0) + 1
        rid = base if seen[base] == 1 else f"{base}--{seen[base]}"
        first = kernels[members[0]]
        impl = first["impl"]
        for i in members:
            kernels[i]["record"] = rid
        out.append({
            "id": rid, "family": family,
            "implementation": f"{first['op'] or 'kernel'} ({impl or tool}: {short_name(name)})",
            "params": params, "latency_s": latency, "samples_s": samples, "measured": True,
            "latency_kind": "device", "kernels": [name],
            "source": f"{source} ({tool} profiler trace on {device_name})",
            "notes": (f"device time of each of the {len(samples)} launches in the profiled step, median; params from "
                      f"the input shapes of {first['op'] or 'the launching op'}; kernel mapped by rule "
                      f"{first['rule']} of accelsim/importers/profile_kernels.py"),
        })
    return out


def shares(kernels: list[dict], total_s: float, keep) -> list[dict]:
    """Kernels ``keep`` selects, grouped by name (and reason): launches, time and share of
    the step's kernel time, largest first."""
    groups: dict[tuple[str, str | None], list[float]] = {}
    for k in kernels:
        if keep(k):
            groups.setdefault((k["name"], k["why_no_params"]), []).append(k["duration_s"])
    rows = [{"name": name, "why": why, "launches": len(times), "time_s": sum(times),
             "share": sum(times) / total_s if total_s else 0.0} for (name, why), times in groups.items()]
    return sorted(rows, key=lambda r: (-r["time_s"], r["name"]))


def measured_step(profile: Profile, *, source: str, arch: str | None, device: int | None, command: str,
                  sha256: str) -> dict[str, Any]:
    """The measured-step document of ``profile``'s work on one device (``device``, default the
    first that ran any)."""
    ran_on = sorted({e.device for e in profile.events})
    if not ran_on:
        raise InputError("the trace holds no device work (kernels, copies) and no host ops", source=source)
    chosen = ran_on[0] if device is None else device
    if chosen not in ran_on:
        raise InputError(f"no work on device {chosen}; the trace has devices {', '.join(map(str, ran_on[:16]))}",
                         field="device")
    kernels = [describe(e) for e in profile.events if e.device == chosen]
    origin = min(k["start_s"] for k in kernels)
    for k in kernels:
        k["start_s"] -= origin
        k["record"] = None
    name = Path(source).name
    device_info = {**profile.device, "arch": arch, "slug": arch or _slug(profile.device.get("name", "cpu")),
                   "index": chosen}
    records = records_of(kernels, name, profile.tool, device_info.get("name", "?"))
    total = sum(k["duration_s"] for k in kernels)
    end = max(k["start_s"] + k["duration_s"] for k in kernels)
    return {
        "schema_version": STEP_SCHEMA_VERSION, "kind": STEP_KIND, "name": name, "device": device_info,
        "provenance": {"date": None, "command": command, "versions": profile.versions, "clocks": None,
                       "source": f"{name} ({profile.tool} profiler trace)", "tool": profile.tool,
                       "input_sha256": sha256, "host_work": profile.host_work,
                       "other_devices": [d for d in ran_on if d != chosen]},
        "step": {"span_s": end, "kernel_time_s": total, "kernels": len(kernels),
                 "streams": sorted({k["stream"] for k in kernels})},
        "unmapped": shares(kernels, total, lambda k: k["class"] is None),
        "not_recorded": shares(kernels, total, lambda k: k["class"] is not None and k["record"] is None),
        "records": records,
        "kernels": kernels,
    }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


# ---------------------------------------------------------------- the step as a system trace


def op_name(index: int, kernel: dict) -> str:
    text = f"k{index} {short_name(kernel['name'])}"
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:MAX_OP_NAME_CHARS]


def measured_order(kernels: Sequence[dict]) -> list[list[int]]:
    """For each kernel, the kernels of other streams it starts after in the measurement: on
    each other stream the last one to have ended by its start. The traces read do not say
    which event a stream waited for, so the replay keeps every order across streams that the
    measurement showed (what overlapped may overlap; nothing that ran after runs before)."""
    ends: dict[str, list[tuple[float, int]]] = {}
    for i, k in enumerate(kernels):
        ends.setdefault(k["stream"], []).append((k["start_s"] + k["duration_s"], i))
    for stream in ends.values():
        stream.sort()
    out = []
    for k in kernels:
        after = []
        for stream, done in ends.items():
            if stream != k["stream"]:
                at = bisect.bisect_right(done, (k["start_s"] + SAME_INSTANT_S, len(kernels))) - 1
                if at >= 0:
                    after.append(done[at][1])
        out.append(sorted(after))
    return out


def step_trace(step: dict[str, Any]) -> SystemTrace:
    """The measured step as a one-device system trace: its kernels in start order on their
    streams, each a family op (``config=auto``) where it has a record, else its measured
    time, each after the kernels of other streams it ran after (:func:`measured_order`)."""
    ops = []
    names = [op_name(i, k) for i, k in enumerate(step["kernels"])]
    for i, (k, after) in enumerate(zip(step["kernels"], measured_order(step["kernels"]))):
        op: dict[str, Any] = {"name": names[i], "kind": "compute", "stream": k["stream"],
                              "ctrl_deps": [names[j] for j in after]}
        if k.get("record") is not None:
            op.update(family=k["class"], params={**k["params"], "config": "auto"})
        else:
            op["duration_s"] = k["duration_s"]
        ops.append(op)
    return SystemTrace.model_validate({
        "schema_version": 1, "kind": "system_trace", "name": f"{step['name']} (measured step, replayed)",
        "num_devices": 1, "programs": [{"name": "measured step", "devices": [0], "ops": ops}],
        "metadata": {"generator": "accelsim import profile", "source": step["name"]},
    })


# ---------------------------------------------------------------- the importer


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="TRACE", help="a PyTorch profiler trace (export_chrome_trace: .json or .json.gz), a "
                                                  "JAX profiler trace (*.trace.json.gz) or an Nsight Systems SQLite "
                                                  "export (nsys export --type sqlite)")
    p.add_argument("--arch", help="the chip config the run was on (e.g. h100-sxm): validate predicts its records on it")
    p.add_argument("--device", type=int, metavar="N", help="the device to import, of a trace of several (default: the "
                                                           "first that ran work)")
    p.add_argument("--hlo", metavar="HLO.txt", help="JAX: the program's HLO text (as the import hlo reads it), whose "
                                                    "shapes give the XLA ops' family parameters")


def _inputs(args: argparse.Namespace) -> list[str]:
    if args.device is not None and not 0 <= args.device < 2**20:
        raise InputError(f"expected a device index from 0 to {2**20 - 1}, got {args.device}", field="device")
    if args.arch is not None:
        from accelsim.arch.loader import measured_config

        args.arch = measured_config(args.arch)  # a calibrated overlay's records are its chip's
    return [args.trace, *([args.hlo] if args.hlo else [])]


def _convert(args: argparse.Namespace) -> Imported:
    profile = read_profile(args.trace, args.hlo)
    sha = hashlib.sha256(read_trace_bytes(args.trace, "profiler trace")).hexdigest()
    command = " ".join(["accelsim import profile", Path(args.trace).name,
                        *([f"--arch {args.arch}"] if args.arch else []),
                        *([f"--device {args.device}"] if args.device is not None else []),
                        *([f"--hlo {Path(args.hlo).name}"] if args.hlo else [])])
    step = measured_step(profile, source=str(args.trace), arch=args.arch, device=args.device, command=command,
                         sha256=sha)
    return Imported(step_trace(step), summary_lines(step), measured=step)


def summary_lines(step: dict[str, Any]) -> tuple[str, ...]:
    """What the import prints after the line naming the file."""
    s = step["step"]
    families = sorted({r["family"] for r in step["records"]})
    lines = [f"{s['kernels']} kernels on {len(s['streams'])} streams, {s['kernel_time_s'] * 1e6:.1f} us of kernel time "
             f"in a {s['span_s'] * 1e6:.1f} us step; {len(step['records'])} records ({', '.join(families) or 'none'})"]
    unmapped = step["unmapped"]
    share = sum(r["share"] for r in unmapped)
    lines.append(f"unmapped: {share:.1%} of the kernel time" + (
        f" ({len(unmapped)} kernel name{'s' if len(unmapped) > 1 else ''}; largest: "
        f"{short_name(unmapped[0]['name'])} {unmapped[0]['share']:.1%})"
        if unmapped else ""))
    if step["device"]["arch"] is None:
        lines.append(f"no --arch: device {shown(step['device'].get('name'))} is not tied to a chip config, so validate "
                     "passes over its records")
    return tuple(lines)


IMPORTER = Importer(
    name="profile", help="a profiled run (PyTorch or JAX profiler trace, Nsight Systems export) as a measured step: "
                         "measurement records and the kernels' timeline, for accelsim validate",
    add_arguments=_add_arguments, inputs=_inputs, convert=_convert,
    hint=" (a kernel's family parameters that the family refuses)", writes="measured step",
    options_of_fields={"device": "--device"},
)
