#!/usr/bin/env python3
"""Compile MaxText's published v5p training steps with the TPU compiler, on a CPU.

    bash validation/maxtext/make_compile_env.sh .maxtext-env      # once: Python 3.12, maxtext 0.2.5
    python validation/maxtext/compile_maxtext.py --env .maxtext-env [--only ID ...] [--batch N]
        [--flags sparsecore|no-memory-tracking] [--tp N]

For each single-slice record of ``v5p_mfu.json`` (the configs of MaxText's
``MaxText/configs/v5p/*.sh`` and the TFLOP/s per chip its README publishes), runs
MaxText's own ahead-of-time compiler (``maxtext.trainers.pre_train.train_compile``) for
the record's v5p slice with the config's flags and the ``LIBTPU_INIT_ARGS`` its script
sets, and keeps the optimised, scheduled HLO of the training step (``compiled.as_text()``,
with XLA's estimated cycles: ``train_compile_text.py``) as ``compiled/ID.hlo.txt.gz`` beside this script,
which ``accelsim import hlo`` reads and ``report_compiled.py`` replays. Runs in the
separate environment: MaxText is never one of accelsim's dependencies.

Which configuration the README measured: its TFLOP/s per chip were committed on
2023-12-15 (``76bd53b0f``, "Refactor MaxText/configs/ and documentation") beside config
scripts that set no ``fuse_all_gather`` flag (added on 2024-01-23, ``64c851db4``; the other
nine flags are the ones below) and larger batches than the records': per_device_batch_size
8 (32B), 4 (64B), 2 (128B, 256B, 512B; the 512B at ici_tensor_parallelism 16). The scripts
moved to the records' configs in 2024 (``e301755d4`` on 2024-02-01: 32B 7, 256B 1, 512B tensor
parallelism 8; ``7081e2c0c`` on 2024-02-20, "Add AOT test scripts for nightly testing of
configs": 32B 6, 64B 3, 128B 1) and the README's figures were never remeasured. Today's
MaxText cannot compile the README's batches: ``CompileTimeHbmOom``, 116.30 GiB of
temporaries for the 64B at batch 4, 107.37 GiB for the 128B and 108.11 GiB for the 256B
at batch 2, against 95.73 GiB. ``--batch N`` compiles a record at another per-device
batch (``ID-batchN.hlo.txt.gz``): a diagnostic of how the batch, through memory pressure,
changes XLA's schedule, not a published run. ``--tp N`` compiles at another
``ici_tensor_parallelism`` (``ID-tpN.hlo.txt.gz``): the 512B's README figure came with
tensor parallelism 16 at the record's batch 2. With ``--tp`` MaxText may split a physical
axis of the slice among mesh axes (``allow_split_physical_axes=true``: today's MaxText
refuses a tensor axis of 16 on an 8x8x8 slice otherwise, 16 being no product of its axes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "compiled"
CONFIG_LIBTPU_INIT_ARGS = (
    "--xla_tpu_enable_async_collective_fusion_fuse_all_gather=true --xla_tpu_megacore_fusion_allow_ags=false "
    "--xla_enable_async_collective_permute=true --xla_tpu_enable_ag_backward_pipelining=true "
    "--xla_tpu_enable_data_parallel_all_reduce_opt=true --xla_tpu_data_parallel_opt_different_sized_ops=true "
    "--xla_tpu_enable_async_collective_fusion=true --xla_tpu_enable_async_collective_fusion_multiple_steps=true "
    "--xla_tpu_overlap_compute_collective_tc=true --xla_enable_async_all_gather=true")
"""What ``MaxText/configs/v5p/32b.sh`` (@0d9779a5) exports; the 64b-512b scripts of that
commit set the same flags."""
LIBTPU_INIT_ARGS = CONFIG_LIBTPU_INIT_ARGS.replace("fuse_all_gather=true", "fuse_all_gather=false")
"""The scripts' flags as libtpu 0.0.52 accepts them on a v5p: it refuses all-gathers fused
into continuation fusions on any TPU but a v5e (``FAILED_PRECONDITION: Continuation fusion
for AllGather is enabled on platform viperfish ... not supported/recommended``), so the
all-gathers stay plain async all-gathers, overlapping independent work."""
SPARSECORE_LIBTPU_INIT_ARGS = LIBTPU_INIT_ARGS + (
    " --xla_sc_disable_megacore_partitioning=true --xla_tpu_use_tc_device_shape_on_sc=true"
    " --xla_tpu_enable_sparse_core_collective_offload_all_gather=true")
"""What maxtext 0.2.5's ``src/maxtext/configs/tpu/v5p/32b.sh`` exports (its only v5p script
whose flags differ from the 2024 ones; its 64b-512b scripts still export those): the same
flags plus all-gathers offloaded to the SparseCores, with all-gather continuation fusion
off (the script writes ``fuse_all_gather=true`` and then ``=false``; here ``=false`` once)."""
NO_MEMORY_TRACKING_LIBTPU_INIT_ARGS = LIBTPU_INIT_ARGS + " --xla_tpu_enable_scheduler_memory_pressure_tracking=false"
"""The scripts' flags with XLA's latency-hiding scheduler not tracking memory pressure (a
libtpu flag MaxText's ``benchmarks/xla_flags_library.py`` sets to ``true`` in its
``HOST_OFFLOAD_FLAGS``): a diagnostic of why the 64B's permutes are bare, not a published
run."""
FLAG_SETS = {"scripts": ("", LIBTPU_INIT_ARGS), "sparsecore": ("-sparsecore", SPARSECORE_LIBTPU_INIT_ARGS),
             "no-memory-tracking": ("-no-memory-tracking", NO_MEMORY_TRACKING_LIBTPU_INIT_ARGS)}
"""``--flags`` -> (suffix of the compiled file's name, LIBTPU_INIT_ARGS)."""


def records(only: list[str] | None) -> list[dict]:
    data = json.loads((HERE / "v5p_mfu.json").read_text())
    chosen = [r for r in data["records"] if r["slices"] == 1]
    return [r for r in chosen if not only or r["id"] in only]


def train_compile_args(record: dict, base_yml: str) -> list[str]:
    """MaxText's flags for the record (its config script's), for the slice of its chips
    (v5p-N names N TensorCores, two per chip)."""
    return [
        base_yml, f"compile_topology=v5p-{2 * record['chips']}", "compile_topology_num_slices=1",
        f"global_parameter_scale={record['global_parameter_scale']}",
        f"per_device_batch_size={record['per_device_batch_size']}", f"remat_policy={record['remat_policy']}",
        "ici_fsdp_parallelism=-1", f"ici_tensor_parallelism={record['ici_tensor_parallelism']}",
        "max_target_length=2048", "attention=flash", "use_iota_embed=true", "dataset_type=synthetic",
        "enable_checkpointing=false", "quantization=", "run_name=accelsim_compile",
    ]


def last_error_line(stderr: str) -> str:
    """The compiler's reason (``RESOURCE_EXHAUSTED: ... CompileTimeHbmOom ...``), else the
    last line MaxText wrote."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "RESOURCE_EXHAUSTED" in line]
    return (errors or lines or ["no output"])[-1][:400]


def compile_record(python: str, record: dict, flags: str = "scripts", batch: int | None = None,
                   tp: int | None = None) -> Path | None:
    """Compile the record with the flag set ``flags``; ``batch`` replaces its
    per_device_batch_size (and names the file ``ID[-FLAGS]-batchN``; ``report_compiled.py``
    replays ``ID-batchN``), ``tp`` its ici_tensor_parallelism (``ID[-FLAGS][-batchN]-tpN``;
    replayed: ``ID-tpN``)."""
    base_yml = subprocess.run([python, "-c", "import maxtext, pathlib; print(pathlib.Path(maxtext.__file__).parent "
                               "/ 'configs' / 'base.yml')"], check=True, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as scratch:
        text = Path(scratch) / "step.hlo.txt"
        suffix, libtpu_init_args = FLAG_SETS[flags]
        if batch is not None:
            record, suffix = {**record, "per_device_batch_size": batch}, f"{suffix}-batch{batch}"
        if tp is not None:
            record, suffix = {**record, "ici_tensor_parallelism": tp}, f"{suffix}-tp{tp}"
        env = dict(os.environ, LIBTPU_INIT_ARGS=libtpu_init_args, TPU_SKIP_MDS_QUERY="1", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
        started = time.perf_counter()
        split_axes = ["allow_split_physical_axes=true"] if tp is not None else []
        ran = subprocess.run([python, str(HERE / "train_compile_text.py"), str(text),
                              *train_compile_args(record, base_yml), *split_axes], env=env, capture_output=True, text=True)
        if ran.returncode != 0 or not text.exists():
            print(f"{record['id']}: not compiled: {last_error_line(ran.stderr)}")
            return None
        OUT.mkdir(exist_ok=True)
        target = OUT / f"{record['id']}{suffix}.hlo.txt.gz"
        target.write_bytes(gzip.compress(text.read_bytes(), compresslevel=9, mtime=0))
        print(f"{record['id']}: {time.perf_counter() - started:.0f} s, {target.stat().st_size / 1e6:.2f} MB gzip")
        return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True, help="the environment make_compile_env.sh made")
    parser.add_argument("--only", nargs="*", help="record ids (default: every single-slice record)")
    parser.add_argument("--flags", choices=FLAG_SETS, default="scripts",
                        help="scripts: the v5p config scripts' LIBTPU_INIT_ARGS (default); sparsecore: maxtext "
                             "0.2.5's 32b.sh, all-gathers offloaded to the SparseCores (ID-sparsecore.hlo.txt.gz); "
                             "no-memory-tracking: the scripts' flags, XLA's scheduler not tracking memory pressure (a "
                             "diagnostic; ID-no-memory-tracking.hlo.txt.gz)")
    parser.add_argument("--batch", type=int, help="per_device_batch_size instead of the record's (a diagnostic; file "
                                                  "ID-batchN.hlo.txt.gz)")
    parser.add_argument("--tp", type=int, help="ici_tensor_parallelism instead of the record's (file ID-tpN.hlo.txt.gz)")
    args = parser.parse_args(argv)
    if args.batch is not None and args.batch < 1:
        parser.error(f"--batch: expected a per-device batch of at least 1, got {args.batch}")
    if args.tp is not None and args.tp < 1:
        parser.error(f"--tp: expected a tensor parallelism of at least 1, got {args.tp}")
    python = str(Path(args.env) / "bin" / "python")
    for record in records(args.only):
        compile_record(python, record, args.flags, args.batch, args.tp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
