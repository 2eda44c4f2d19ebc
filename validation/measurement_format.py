"""The measurement file format, version 1: what validation code writes and the simulator is compared with.

One JSON file holds the records of one kernel family measured on one device (or
converted from one published source set). ``docs/measurement-format.md`` is the
full description; this module is its executable part, shared by the writers
(``measure_gpu.py``, ``reference/build_reference.py``) and the tests:

* the family vocabulary (:data:`FAMILY_PARAMS`): each family's ``params`` keys are
  exactly the simulator's kernel-family parameters;
* the counting rules for ``flops`` and ``bytes`` (:func:`nominal_flops`,
  :func:`min_bytes`), so measured and published records count alike;
* record ids, device-name to accelsim-config mapping, atomic writing, and a
  validator (:func:`validate_measurement_file`) that returns every problem found.

Standard library only: it runs on a bare device machine and must not import
accelsim (whose dependencies are not installed there).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
KIND = "measurements"

FAMILY_PARAMS: dict[str, tuple[str, ...]] = {
    "gemm": ("M", "N", "K", "dtype", "batch"),
    "attention": ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "causal", "dtype", "pass"),
    "softmax": ("rows", "cols", "dtype"),
    "layernorm": ("rows", "cols", "dtype"),
    "rmsnorm": ("rows", "cols", "dtype"),
    "copy": ("bytes",),
    "elementwise": ("elements", "dtype", "inputs", "outputs"),
    "collective": ("collective", "bytes", "ranks", "dtype"),
}
FAMILIES = tuple(FAMILY_PARAMS)

OPTIONAL_PARAMS: dict[str, tuple[str, ...]] = {
    "attention": ("impl",),
    "gemm": ("groups", "impl", "layout", "out_dtype"),
    "layernorm": ("impl", "weight_dtype"),
    "rmsnorm": ("impl", "weight_dtype"),
}
"""Params a record may leave out (the simulator's defaults: one group; the family's default
implementation on the record's chip): ``groups`` (a grouped GEMM's groups, ``M`` counting every
group's rows), ``layout`` (a grouped GEMM's ``contiguous`` or ``masked`` rows), ``out_dtype``
(a GEMM's C dtype where it is not the usual one for its inputs: fp32 from fp16), ``impl``
(which implementation ran, as ``--param impl`` names it) and a norm's ``weight_dtype`` (its
weights' dtype where it is not the input's: a module kept in fp32 under bf16 activations)."""

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter")
"""The ``collective`` family's kinds, named as ``accelsim simulate --collective`` names them."""

FAMILY_DTYPES: dict[str, tuple[str, ...]] = {  # the choices of the simulator's dtype parameter
    "gemm": ("fp32", "tf32", "bf16", "fp16", "fp8", "int8"),
    "attention": ("bf16", "fp16", "fp8"),
    "softmax": ("fp32", "bf16", "fp16"),
    "layernorm": ("fp32", "bf16", "fp16"),
    "rmsnorm": ("fp32", "bf16", "fp16"),
    "elementwise": ("fp64", "fp32", "bf16", "fp16", "fp8", "int8"),
    "collective": ("fp32", "bf16", "fp16"),
}

DTYPE_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
GEMM_OUTPUT_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 2, "int8": 4}
"""Bytes per output element: fp8 GEMMs write bf16, int8 GEMMs accumulate into int32."""

ELEMENTWISE_FLOPS_PER_ELEMENT: dict[str, int] = {"softmax": 5, "layernorm": 8, "rmsnorm": 4}
"""Nominal operations per input element, for rooflines only (softmax: max, subtract, exp,
sum, divide; layernorm: mean, centre, square, sum, scale, affine (2), normalise; rmsnorm:
square, sum, scale, weight)."""

ATTENTION_BWD_FLOPS_FACTOR = 2.5
"""Backward = 2.5 x forward matmul flops (five S x S x D products against two), as in the
FlashAttention benchmarks."""

KNOWN_ARCHS = ("a100-sxm4-80gb", "a100-sxm4-40gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "gh200", "b200", "gb200",
               "b300", "mi300x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x")
"""The accelsim chip configs (``arch_configs/gpu/*.yaml``, ``arch_configs/tpu/*.yaml``) a device
can be mapped to."""

_ARCH_BY_DEVICE_NAME: tuple[tuple[str, str | None], ...] = (
    # Order matters: the first pattern that matches decides. NVL parts run at other
    # power limits and clocks than the SXM configs; the H100 NVL has its own config, the
    # H200 NVL none.
    (r"\bH100\b.*\bPCIe\b", "h100-pcie"),
    (r"\bH100\b.*\bNVL\b", "h100-nvl"),
    (r"\bH200\b.*\bNVL\b", None),
    (r"\bH100\b.*(SXM|HBM3\b)", "h100-sxm"),
    (r"\bGH200\b.*(144G|HBM3e)", "gh200"),  # the 96 GB HBM3 version ("GH200 480GB") has other HBM
    (r"\bGH200\b", None),
    (r"\bH200\b", "h200-sxm"),
    (r"\bA100\b.*SXM4?-80GB", "a100-sxm4-80gb"),
    (r"\bA100\b.*SXM4?-40GB", "a100-sxm4-40gb"),
    (r"\bGB200\b", "gb200"),
    (r"\bB200\b", "b200"),
    (r"\bB300\b", "b300"),
    (r"\bMI300X\b", "mi300x"),
    # JAX's device_kind of TPUs: "TPU v4", "TPU v4 lite" (v4i), "TPU v5 lite" (v5e),
    # "TPU v5" (v5p), "TPU v6 lite" (v6e), "TPU7x"
    (r"\bTPU v4 lite\b", None),
    (r"\bTPU v4\b", "tpu-v4"),
    (r"\bTPU v5 ?(lite|e)\b", "tpu-v5e"),
    (r"\bTPU v5p?\b", "tpu-v5p"),
    (r"\bTPU v6 ?(lite|e)\b", "tpu-v6e"),
    (r"\bTPU ?7x\b", "tpu7x"),
)


def arch_for_device_name(name: str) -> str | None:
    """The accelsim config name for a device as its driver names it, or None when no config fits.

    ``"NVIDIA H200"`` -> ``"h200-sxm"``; ``"NVIDIA H100 80GB HBM3"`` -> ``"h100-sxm"``;
    ``"NVIDIA H200 NVL"`` -> None.
    """
    for pattern, arch in _ARCH_BY_DEVICE_NAME:
        if re.search(pattern, name, flags=re.IGNORECASE):
            return arch
    return None


def slugify(text: str) -> str:
    """Lower-case letters, digits and single dashes: ``"NVIDIA H100 PCIe"`` -> ``"nvidia-h100-pcie"``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def device_slug(name: str, arch: str | None) -> str:
    """The folder name for a device's files: its accelsim config name, else its slugified name."""
    return arch or slugify(name)


def format_bytes(n: int) -> str:
    """Exact binary sizes as ``1MiB``/``4GiB``, anything else as ``<n>B``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def record_id(family: str, params: dict[str, Any], tag: str | None = None) -> str:
    """A readable id built from the family and params; ``tag`` tells implementations apart."""
    p = params
    if family == "gemm":
        base = f"gemm-{p['dtype']}-{p['M']}x{p['N']}x{p['K']}"
        if p["batch"] != 1:
            base += f"-b{p['batch']}"
    elif family == "attention":
        heads = f"h{p['heads']}" + (f"kv{p['kv_heads']}" if p["kv_heads"] != p["heads"] else "")
        base = (
            f"attention-{p['pass']}-{p['dtype']}-b{p['batch']}-{heads}"
            f"-q{p['seq_q']}-kv{p['seq_kv']}-d{p['head_dim']}" + ("-causal" if p["causal"] else "")
        )
    elif family == "copy":
        base = f"copy-{format_bytes(p['bytes'])}"
    elif family == "elementwise":
        base = f"elementwise-{p['dtype']}-{p['inputs']}in{p['outputs']}out-{p['elements']}"
    elif family == "collective":
        base = f"{p['collective']}-{p['dtype']}-{format_bytes(p['bytes'])}-n{p['ranks']}"
    else:
        base = f"{family}-{p['dtype']}-{p['rows']}x{p['cols']}"
    return f"{base}--{tag}" if tag else base


def gemm_params(M: int, N: int, K: int, dtype: str, batch: int = 1) -> dict:
    return {"M": M, "N": N, "K": K, "dtype": dtype, "batch": batch}


ATTENTION_PASSES = ("fwd", "bwd", "bwd-kernel")
"""``bwd``: a whole backward call (SDPA's; with the Delta pass and the dQ cast);
``bwd-kernel``: the backward kernel alone (our Triton kernel as measure_triton.py times it)."""


def attention_params(batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, dtype="bf16", pass_="fwd") -> dict:
    return {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_q": seq_q, "seq_kv": seq_kv,
            "head_dim": head_dim, "causal": causal, "dtype": dtype, "pass": pass_}


def fa_setup_params(seq: int, head_dim: int, causal: bool, dtype="bf16", pass_="fwd") -> dict:
    """The FlashAttention papers' benchmark: 16k tokens per batch, hidden size 2048."""
    return attention_params(16384 // seq, 2048 // head_dim, 2048 // head_dim, seq, seq, head_dim, causal, dtype, pass_)


def rows_params(rows: int, cols: int, dtype: str) -> dict:
    return {"rows": rows, "cols": cols, "dtype": dtype}


def gemm_config(block_m: int, block_n: int, block_k: int, *, group_m: int = 8, num_stages: int = 3,
                num_warps: int = 8) -> dict:
    """A gemm family config (no split-K) in the simulator's vocabulary."""
    return {"block_m": block_m, "block_n": block_n, "block_k": block_k, "group_m": group_m, "split_k": 1,
            "num_stages": num_stages, "num_warps": num_warps}


def attention_config(block_m: int, block_n: int, *, num_stages: int = 2, num_warps: int = 8, split_kv: int = 1) -> dict:
    """An attention family config in the simulator's vocabulary (``split_kv``: decode's split)."""
    return {"block_m": block_m, "block_n": block_n, "num_stages": num_stages, "num_warps": num_warps,
            "split_kv": split_kv}


CONFIG_TAG_KEYS = {"block_m": "bm", "block_n": "bn", "block_k": "bk", "group_m": "g", "block_rows": "br",
                   "num_warps": "w", "num_stages": "s", "split_kv": "sp"}


def config_tag(kernel: str, config: dict[str, Any]) -> str:
    """The id tag of one of our tunable kernels at one config: ``pallas-matmul-bm128bn128bk64w4s3``."""
    return f"{kernel}-" + "".join(f"{CONFIG_TAG_KEYS[k]}{v}" for k, v in config.items() if k in CONFIG_TAG_KEYS)


def row_blocks(rows: int, block: int) -> list[int]:
    """Row indices of the first, a middle and the last block of ``block`` rows: what a
    correctness check compares when each row's result depends on no other row."""
    starts = sorted({0, (rows // 2) // block * block, max(0, rows - block)})
    return sorted({r for s in starts for r in range(s, min(rows, s + block))})


def nominal_flops(family: str, params: dict[str, Any]) -> float:
    """Operations by the format's counting rule (docs/measurement-format.md, "Counting")."""
    p = params
    if family == "gemm":
        return 2.0 * p["batch"] * p["M"] * p["N"] * p["K"]
    if family == "attention":
        forward = 4.0 * p["batch"] * p["heads"] * p["seq_q"] * p["seq_kv"] * p["head_dim"]
        if p["causal"]:
            forward /= 2.0
        return forward * (ATTENTION_BWD_FLOPS_FACTOR if p["pass"] != "fwd" else 1.0)
    if family in ("copy", "collective"):
        return 0.0
    if family == "elementwise":
        return float(p["inputs"] * p["elements"])
    return float(ELEMENTWISE_FLOPS_PER_ELEMENT[family] * p["rows"] * p["cols"])


def min_bytes(family: str, params: dict[str, Any]) -> int:
    """The fewest bytes the kernel must move through device memory: each input read once, each output written once."""
    p = params
    if family == "gemm":
        operand = DTYPE_BYTES[p["dtype"]]
        inputs = (p["M"] * p["K"] + p.get("groups", 1) * p["K"] * p["N"]) * operand  # a B per group
        given = p.get("out_dtype", "auto")
        output = p["M"] * p["N"] * (GEMM_OUTPUT_BYTES[p["dtype"]] if given == "auto" else DTYPE_BYTES[given])
        return p["batch"] * (inputs + output)
    if family == "attention":
        q_like = p["batch"] * p["heads"] * p["seq_q"] * p["head_dim"]
        kv_like = p["batch"] * p["kv_heads"] * p["seq_kv"] * p["head_dim"]
        if p["pass"] == "fwd":
            elements = 2 * q_like + 2 * kv_like  # read q, k, v; write o
        else:
            elements = 4 * q_like + 4 * kv_like  # read q, k, v, o, do; write dq, dk, dv
        return elements * DTYPE_BYTES[p["dtype"]]
    if family == "copy":
        return 2 * p["bytes"]
    if family == "collective":
        return p["bytes"]
    if family == "elementwise":
        return (p["inputs"] + p["outputs"]) * p["elements"] * DTYPE_BYTES[p["dtype"]]
    size = DTYPE_BYTES[p["dtype"]]
    row_data = 2 * p["rows"] * p["cols"] * size  # read x, write y
    weight_size = DTYPE_BYTES[p.get("weight_dtype", p["dtype"])]
    weights = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[family] * p["cols"] * weight_size
    return row_data + weights


BUS_FACTOR_NUMERATOR = {"all-reduce": 2, "all-gather": 1, "reduce-scatter": 1}


def bus_bandwidth(collective: str, size_bytes: int, ranks: int, latency_s: float) -> tuple[float, float]:
    """nccl-tests' ``(algbw, busbw)`` in bytes/s: ``algbw = S / t``; ``busbw = algbw x 2(n-1)/n``
    for all-reduce and ``x (n-1)/n`` for all-gather and reduce-scatter (doc/PERFORMANCE.md of
    nccl-tests). ``S`` is the all-reduce buffer, the all-gather output, the reduce-scatter input."""
    algbw = size_bytes / latency_s
    return algbw, algbw * BUS_FACTOR_NUMERATOR[collective] * (ranks - 1) / ranks


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write JSON to a temporary file in the same folder, then rename it into place.

    A reader (or a run killed mid-write) sees the old file or the new one, never half of one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_number(value: Any) -> bool:
    """A finite JSON number (an integer of any size is finite: ``math.isfinite`` would
    overflow converting a huge one)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


ARRAY_COUNTS = ("inputs", "outputs")
"""``elementwise`` params that may be 0 (a fill reads nothing; a read-only pass writes nothing)."""


def validate_params(family: str, params: Any) -> list[str]:
    """Problems with one record's params (empty when they are valid)."""
    if not isinstance(params, dict):
        return ["params: expected an object"]
    expected = FAMILY_PARAMS[family]
    optional = OPTIONAL_PARAMS.get(family, ())
    errors = []
    if not set(expected) <= set(params) <= set(expected) | set(optional):
        missing = sorted(set(expected) - set(params))
        extra = sorted(set(params) - set(expected) - set(optional))
        errors.append(f"params: expected keys {list(expected)} (missing {missing}, unknown {extra})")
    for key, value in params.items():
        if key not in expected and key not in optional:
            continue
        if key in ("impl", "layout"):
            if not (isinstance(value, str) and value.isidentifier()):
                errors.append(f"params.impl: expected an implementation name, got {value!r}")
        elif key == "out_dtype":
            if value not in ("fp32", "bf16", "fp16"):
                errors.append(f"params.out_dtype: {value!r} is not one of ['fp32', 'bf16', 'fp16']")
        elif key == "weight_dtype":
            if value not in FAMILY_DTYPES[family]:
                errors.append(f"params.weight_dtype: {value!r} is not one of {list(FAMILY_DTYPES[family])}")
        elif key == "dtype":
            if value not in FAMILY_DTYPES[family]:
                errors.append(f"params.dtype: {value!r} is not one of {list(FAMILY_DTYPES[family])}")
        elif key == "causal":
            if not isinstance(value, bool):
                errors.append(f"params.causal: expected true or false, got {value!r}")
        elif key == "collective":
            if value not in COLLECTIVES:
                errors.append(f"params.collective: {value!r} is not one of {list(COLLECTIVES)}")
        elif key == "pass":
            if value not in ATTENTION_PASSES:
                errors.append(f"params.pass: expected one of {list(ATTENTION_PASSES)}, got {value!r}")
        elif key in ARRAY_COUNTS:
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                errors.append(f"params.{key}: expected an integer >= 0, got {value!r}")
        elif not _is_positive_int(value):
            errors.append(f"params.{key}: expected a positive integer, got {value!r}")
    if family == "elementwise" and not errors and params["inputs"] + params["outputs"] < 1:
        errors.append("params: expected at least one input or output array")
    if family == "attention" and not errors and params["heads"] % params["kv_heads"]:
        errors.append("params: heads must be a multiple of kv_heads")
    return errors


LATENCY_KINDS = ("launches", "device")
"""A record's optional ``latency_kind``: ``launches`` (the default: each kernel with its launch, as
event-bracketed or back-to-back calls measure it) or ``device`` (kernel execution alone, a
profiler's device time without launch gaps)."""


CONDITION_PATH = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)*")
NOT_CONDITIONS = ("schema_version", "kind", "extends", "name", "aliases", "display_name", "description")
"""A record's optional ``conditions``: config paths (not these, which say which chip it is)
and values as accelsim's ``--set`` takes them, e.g. ``{"clock": "1500 MHz"}``."""


CACHE_FLUSH_ACCESSES = ("write", "read")
"""A record's optional ``cache_flush``: ``{bytes, access}``, the buffer the timing tool moves
before each timed call to clear the L2, written (``triton.testing.do_bench`` zeroes 256 MiB: it
leaves the L2 full of dirty lines) or read (it leaves the L2 clean)."""


MAX_MEASURED_S = 86400.0
"""A day: no kernel or collective measurement takes longer; a larger value is a unit slip
(accelsim's reader refuses it too)."""


def validate_record(record: Any, family: str) -> list[str]:
    """Problems with one record (empty when it is valid)."""
    if not isinstance(record, dict):
        return ["expected an object"]
    errors = []
    required = ("id", "family", "implementation", "params", "latency_s", "samples_s", "flops", "bytes", "measured", "source", "notes")
    errors += [f"{key}: missing" for key in required if key not in record]
    if errors:
        return errors
    if record["family"] != family:
        errors.append(f"family: {record['family']!r} in a {family!r} file")
    for key in ("id", "implementation", "source"):
        if not isinstance(record[key], str) or not record[key].strip():
            errors.append(f"{key}: expected a non-empty string")
    if not isinstance(record["notes"], str):
        errors.append("notes: expected a string")
    errors += validate_params(family, record["params"])
    if not (_is_number(record["latency_s"]) and 0 < record["latency_s"] <= MAX_MEASURED_S):
        errors.append(f"latency_s: expected seconds above 0 and at most {MAX_MEASURED_S:g} (a day), "
                      f"got {record['latency_s']!r}")
    samples = record["samples_s"]
    if not isinstance(samples, list) or not all(_is_number(s) and 0 < s <= MAX_MEASURED_S for s in samples):
        errors.append(f"samples_s: expected a list of seconds above 0 and at most {MAX_MEASURED_S:g}")
    for key in ("flops", "bytes"):
        value = record[key]
        if value is not None and not (_is_number(value) and value >= 0):
            errors.append(f"{key}: expected a non-negative number or null")
    if not isinstance(record["measured"], bool):
        errors.append("measured: expected true or false")
    if "latency_kind" in record and record["latency_kind"] not in LATENCY_KINDS:
        errors.append(f"latency_kind: expected one of {', '.join(LATENCY_KINDS)}")
    launches = record.get("kernel_device_s")
    if "kernel_device_s" in record and not (isinstance(launches, list) and launches and all(
            isinstance(k, dict) and set(k) == {"name", "device_s"} and isinstance(k["name"], str)
            and _is_number(k["device_s"]) and k["device_s"] > 0 for k in launches)):
        errors.append("kernel_device_s: expected a list of {name, device_s} with device_s a positive number")
    conditions = record.get("conditions")
    if "conditions" in record and not (isinstance(conditions, dict) and conditions and all(
            isinstance(k, str) and CONDITION_PATH.fullmatch(k) and k.split(".")[0] not in NOT_CONDITIONS
            and isinstance(v, str | int | float) and not isinstance(v, bool) and "#" not in str(v)
            and "\n" not in str(v) for k, v in conditions.items())):
        errors.append("conditions: expected an object of config paths and values (e.g. {\"clock\": \"1500 MHz\"})")
    informs = record.get("informs")
    if "informs" in record and not (isinstance(informs, list) and all(
            isinstance(v, str) and CONDITION_PATH.fullmatch(v) for v in informs)):
        errors.append("informs: expected a list of config paths (the published values derived from the record)")
    flush = record.get("cache_flush")
    if "cache_flush" in record and not (isinstance(flush, dict) and set(flush) == {"bytes", "access"}
                                        and flush["access"] in CACHE_FLUSH_ACCESSES
                                        and _is_number(flush["bytes"]) and flush["bytes"] >= 1):
        errors.append("cache_flush: expected {bytes, access}: the bytes the timing tool's flush moves before each "
                      f"timed call (at least 1) and how ({' or '.join(CACHE_FLUSH_ACCESSES)})")
    clock = record.get("sm_clock_mhz")
    if "sm_clock_mhz" in record and not clock_reading_ok(clock):
        errors.append("sm_clock_mhz: expected {median, min, max, readings}: clocks in MHz from 1 to 1e6 with "
                      "min <= median <= max, and a whole number of readings")
    return errors


def clock_reading_ok(clock: Any) -> bool:
    """A record's ``sm_clock_mhz``: ``{median, min, max}`` in MHz (1 to 10^6, min <= median
    <= max) and how many ``readings`` they summarise (a positive integer)."""
    return (isinstance(clock, dict) and set(clock) == {"median", "min", "max", "readings"}
            and all(_is_number(clock[k]) and 1 <= clock[k] <= 1e6 for k in ("median", "min", "max"))
            and _is_positive_int(clock["readings"]) and clock["min"] <= clock["median"] <= clock["max"])


@dataclass
class FamilyFile:
    """The growing contents of one family's measurement file; :meth:`write` saves it atomically,
    so a run stopped by a time limit leaves every finished case on disk."""

    path: Path
    family: str
    device: dict
    provenance: dict
    checks: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    records: list = field(default_factory=list)

    def write(self) -> None:
        write_json_atomic(self.path, {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "family": self.family,
            "device": self.device,
            "provenance": self.provenance,
            "checks": self.checks,
            "skipped": self.skipped,
            "records": self.records,
        })

    def skip(self, params: dict, reason: str, tag: str | None = None) -> None:
        rid = record_id(self.family, params, tag)
        self.skipped.append({"id": rid, "params": params, "reason": reason})
        print(f"  skip {rid}: {reason}", flush=True)


def validate_measurement_file(data: Any) -> list[str]:
    """Every problem with a decoded measurement file, each prefixed by where it is; empty when valid."""
    if not isinstance(data, dict):
        return ["expected a JSON object"]
    if data.get("schema_version") != SCHEMA_VERSION:
        return [f"schema_version: {data.get('schema_version')!r} is not {SCHEMA_VERSION}, the version this reader knows"]
    errors = []
    if data.get("kind") != KIND:
        errors.append(f"kind: expected {KIND!r}")
    family = data.get("family")
    if not isinstance(family, str) or family not in FAMILY_PARAMS:
        return errors + [f"family: {family!r} is not one of {list(FAMILIES)}"]
    device = data.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("name"), str) or "arch" not in device:
        errors.append("device: expected an object with 'name' and 'arch'")
    elif device["arch"] is not None and device["arch"] not in KNOWN_ARCHS:
        errors.append(f"device.arch: {device['arch']!r} is not an accelsim config ({', '.join(KNOWN_ARCHS)}) or null")
    provenance = data.get("provenance")
    keys = ("date", "command", "versions", "clocks", "source")
    if not isinstance(provenance, dict) or any(k not in provenance for k in keys):
        errors.append(f"provenance: expected an object with {list(keys)}")
    records = data.get("records")
    if not isinstance(records, list):
        return errors + ["records: expected a list"]
    seen: set[str] = set()
    for index, record in enumerate(records):
        errors += [f"records[{index}].{e}" for e in validate_record(record, family)]
        rid = record.get("id") if isinstance(record, dict) else None
        if not isinstance(rid, str):
            continue  # validate_record has said so
        if rid in seen:
            errors.append(f"records[{index}].id: {rid!r} is not unique")
        seen.add(rid)
    return errors
