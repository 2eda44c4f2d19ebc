#!/usr/bin/env python3
"""Convert the transcribed gpu-stream occupancy sweeps into measurement files.

    python3 validation/stream_occupancy/build_stream_occupancy.py

Reads ``gpu_stream_tables.json`` (the init, read, scale and triad columns of gpu-benches'
``gpu-stream/h200.txt`` and ``gpu-stream/a100_40.txt``, each with its commit) and writes
``<arch>/elementwise.json`` here: one ``elementwise`` record per block size and kernel,
with the launch that ran as its config (one double per thread, ``block_size`` threads,
two programs per SM held by a reserved shared-memory array). The 100%-occupancy rows are
the four records of ``validation/reference/`` again, from the same files. Deterministic;
``tests/validation/test_stream_occupancy.py`` checks that rebuilding reproduces the
committed files. Standard library only (``validation/measurement_format.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import measurement_format as fmt  # noqa: E402

ELEMENTS = 128 * 1024 * 1024 + 2
"""gpu-stream/main.cu: ``max_buffer_size`` doubles per array."""
KERNELS = {  # column: (arrays read, arrays written, body)
    "init": (0, 1, "A[i] = 0.23"),
    "read": (1, 0, "t = B[i]; A[i] written only if t == 123.0, which it never is"),
    "scale": (1, 1, "A[i] = 1.2 * B[i]"),
    "triad": (2, 1, "A[i] = 1.2 * B[i] + C[i]"),
}
RESERVED_BYTES = 80 * 1024
"""Shared memory each program is given in the records' config so that an SM holds two, as
the benchmark forces with its ``spoiler`` array and a shared-memory carveout (``main.cu``
checks ``cudaOccupancyMaxActiveBlocksPerMultiprocessor == 2`` and prints a mark otherwise;
the sweeps show none). 80 KiB: two fit in an A100's 164 KiB and an H100/H200's 228 KiB,
three in neither."""
DISPLAY_NAMES = {"h200-sxm": "NVIDIA H200 SXM 141GB", "a100-sxm4-40gb": "NVIDIA A100 SXM4 40GB"}


def records(arch: str, device: dict, kernel_source: str) -> list[dict]:
    out = []
    for block, *bandwidths in device["rows"]:
        for (kernel, (inputs, outputs, body)), gb_per_s in zip(KERNELS.items(), bandwidths, strict=True):
            params = {"elements": ELEMENTS, "dtype": "fp64", "inputs": inputs, "outputs": outputs}
            streams = max(inputs + outputs, 1)
            out.append({
                "id": fmt.record_id("elementwise", params, f"gpu-stream-{kernel}-t{block}"),
                "family": "elementwise",
                "implementation": f"gpu-benches gpu-stream '{kernel}' kernel (CUDA, fp64 {body})",
                "params": params,
                "latency_s": float(f"{streams * ELEMENTS * 8 / (gb_per_s * 1e9):.12g}"),
                "samples_s": [],
                "flops": fmt.nominal_flops("elementwise", params),
                "bytes": fmt.min_bytes("elementwise", params),
                "measured": True,
                "source": device["source"],
                "notes": (f"{block} threads per block, 2 blocks per SM ({block / 10.24:.1f}% occupancy); latency_s "
                          f"derived from {gb_per_s} GB/s as {streams}*{ELEMENTS * 8}/bandwidth. {kernel_source}"),
                "hardware": device["hardware"],
                "config": {"block_elements": block, "num_warps": block // 32, "local_memory_bytes": RESERVED_BYTES},
            })
    return out


def build(tables: dict) -> dict[Path, dict]:
    files = {}
    for arch, device in sorted(tables["devices"].items()):
        files[Path(arch) / "elementwise.json"] = {
            "schema_version": fmt.SCHEMA_VERSION,
            "kind": fmt.KIND,
            "family": "elementwise",
            "device": {"name": DISPLAY_NAMES[arch], "arch": arch, "slug": arch, "kind": "gpu",
                       "source_names": [device["hardware"]]},
            "provenance": {
                "date": None,
                "command": "python3 validation/stream_occupancy/build_stream_occupancy.py",
                "versions": {},
                "clocks": {},
                "source": f"validation/stream_occupancy/gpu_stream_tables.json, transcribed from {device['source']}",
            },
            "records": records(arch, device, tables["kernel_source"]),
        }
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    out = parser.parse_args(argv).out
    tables = json.loads((HERE / "gpu_stream_tables.json").read_text(encoding="utf-8"))
    for relative, data in build(tables).items():
        problems = fmt.validate_measurement_file(data)
        if problems:
            sys.exit(f"build_stream_occupancy.py: error: {relative}: {problems[0]}")
        fmt.write_json_atomic(out / relative, data)
        print(f"{relative}: {len(data['records'])} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
