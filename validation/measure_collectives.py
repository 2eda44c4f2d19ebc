#!/usr/bin/env python3
"""Measure collectives over the visible GPUs, as nccl-tests does: an all-reduce, all-gather
and reduce-scatter size sweep through torch.distributed (NCCL), and JAX's ``psum``,
``all_gather`` and ``psum_scatter`` over the local devices.

    python3 validation/measure_collectives.py --backend torch --out "$OUT/h200-sxm/collectives"
    torchrun --nproc-per-node 8 validation/measure_collectives.py --backend torch --out DIR   # also works
    python3 validation/measure_collectives.py --backend jax --out DIR
    python3 validation/measure_collectives.py --backend torch --device cpu --ranks 2 --quick --out /tmp/c  # gloo
    XLA_FLAGS=--xla_force_host_platform_device_count=8 \\
        python3 validation/measure_collectives.py --backend jax --device cpu --quick --out /tmp/c

``measure_gpu.py`` runs both as its ``collectives`` suite. With fewer than two devices
nothing is timed: every case is recorded in ``skipped`` with the reason ("1 device").

The torch backend starts one process per GPU with ``torch.multiprocessing.spawn`` (or
runs as one rank of ``torchrun``, which sets ``RANK``/``WORLD_SIZE``). Per collective,
a small case is first checked exactly (integer-valued fp32 inputs, so sums are exact;
never zeros). Per size: 5 warm-up calls, then samples of ``iters`` back-to-back calls
bracketed by CUDA events (perf_counter on the CPU), each sample divided by ``iters`` and
averaged over ranks (nccl-tests' default ``-a 1``); ``latency_s`` is the median sample.
Out-of-place all-gather and reduce-scatter (``all_gather_into_tensor``,
``reduce_scatter_tensor``), in-place all-reduce (the only form torch has). No cache
flush: like nccl-tests, back-to-back calls. JAX: the same sizes, ``shard_map`` over a
one-axis mesh of all local devices, host-timed batches of ``iters`` calls ended by
``block_until_ready``.

Sizes follow nccl-tests: ``S`` is the all-reduce buffer, the all-gather output and the
reduce-scatter input; algbw = S / t, busbw = algbw x 2(n-1)/n (all-reduce) or x (n-1)/n
(``measurement_format.bus_bandwidth``). Files: ``<out>/nccl.json`` and ``<out>/jax.json``,
family ``collective`` (``docs/measurement-format.md``). Needs torch or jax, and numpy for
JAX; never accelsim.
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import measurement_format as fmt  # noqa: E402
from measurement_format import FamilyFile  # noqa: E402
from provenance import command_line, module_versions, now_utc, read_gpu_state, suite_parser  # noqa: E402

STARTED = time.monotonic()
WARMUP_CALLS = 5
SAMPLES = {"gpu": 5, "gpu-quick": 3, "cpu": 3, "cpu-quick": 3}
ITERS = {"gpu": 20, "gpu-quick": 10, "cpu": 3, "cpu-quick": 2}
CHECK_ELEMENTS_PER_RANK = 64


def sizes(scale: str) -> list[int]:
    """Bytes S per case (doubling, as nccl-tests ``-f 2``): 1 KiB .. 8 GiB on a GPU."""
    if scale == "cpu-quick":
        return [2**10, 2**14]
    if scale == "cpu":
        return [2**p for p in range(10, 19, 2)]
    if scale == "gpu-quick":
        return [2**p for p in (10, 20, 26, 30)]
    return [2**p for p in range(10, 34)]


def _case(collective: str, size: int, ranks: int) -> dict:
    return {"collective": collective, "bytes": size, "ranks": ranks, "dtype": "fp32"}


def make_record(params: dict, samples: list[float], implementation: str, notes: str) -> dict:
    latency = statistics.median(samples)
    algbw, busbw = fmt.bus_bandwidth(params["collective"], params["bytes"], params["ranks"], latency)
    return {
        "id": fmt.record_id("collective", params),
        "family": "collective",
        "implementation": implementation,
        "params": params,
        "latency_s": latency,
        "samples_s": samples,
        "flops": 0.0,
        "bytes": fmt.min_bytes("collective", params),
        "measured": True,
        "source": f"validation/measure_collectives.py, {now_utc()}",
        "notes": notes,
        "algbw_bytes_per_s": algbw,
        "busbw_bytes_per_s": busbw,
    }


def _fits(size: int, ranks: int) -> bool:
    """Every rank's share is a whole number of fp32 elements."""
    return size % (4 * ranks) == 0


def _skip_all(file: FamilyFile, scale: str, ranks: int, reason: str) -> None:
    for collective in fmt.COLLECTIVES:
        for size in sizes(scale):
            file.skip(_case(collective, size, ranks), reason)


# --------------------------------------------------------------------------- torch.distributed


def _torch_check_tensors(torch, collective: str, size: int, ranks: int, rank: int, device):
    """(input, output, expected) of the small check case: every rank can rebuild every other
    rank's input from its seed; integer-valued fp32, so the sums are exact."""
    count = size // 4

    def data(n, seed_rank):
        g = torch.Generator().manual_seed(1000 + seed_rank)
        return (torch.randint(-8, 8, (n,), generator=g) + 0.5).float()

    if collective == "all-reduce":
        x = data(count, rank).to(device)
        return x, x, sum(data(count, r) for r in range(ranks))
    if collective == "all-gather":
        x = data(count // ranks, rank).to(device)
        return x, torch.empty(count, device=device), torch.cat([data(count // ranks, r) for r in range(ranks)])
    x = data(count, rank).to(device)
    share = count // ranks
    expected = sum(data(count, r) for r in range(ranks))[rank * share:(rank + 1) * share]
    return x, torch.empty(share, device=device), expected


def _torch_tensors(torch, collective: str, size: int, ranks: int, rank: int, device):
    """(input, output) of one timed case, drawn on the device (8 GiB cases stay off the host)."""
    count = size // 4
    torch.manual_seed(2000 + rank)
    n_in = count // ranks if collective == "all-gather" else count
    x = torch.randint(-8, 8, (n_in,), device=device).float() + 0.5
    if collective == "all-reduce":
        return x, x
    return x, torch.empty(count if collective == "all-gather" else count // ranks, device=device)


def _torch_call(dist, collective: str, x, out) -> Callable[[], None]:
    if collective == "all-reduce":
        return lambda: dist.all_reduce(x)
    if collective == "all-gather":
        return lambda: dist.all_gather_into_tensor(out, x)
    return lambda: dist.reduce_scatter_tensor(out, x)  # deprecated in torch 2.13, the name torch 2.11 has


def torch_worker(rank: int, ranks: int, args: argparse.Namespace, scale: str, on_gpu: bool,
                 local_rank: int | None = None) -> None:
    import torch
    import torch.distributed as dist

    warnings.filterwarnings("ignore", message=".*reduce_scatter_tensor.* is deprecated", category=FutureWarning)
    if on_gpu:
        device = torch.device("cuda", rank if local_rank is None else local_rank)
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)
        device = torch.device("cpu")
    dist.init_process_group("nccl" if on_gpu else "gloo", rank=rank, world_size=ranks)
    try:
        _torch_sweep(torch, dist, rank, ranks, device, args, scale, on_gpu)
    finally:
        dist.destroy_process_group()


def _torch_sweep(torch, dist, rank, ranks, device, args, scale, on_gpu) -> None:
    deadline = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
    file = _torch_file(args, ranks, on_gpu) if rank == 0 else None
    backend = "NCCL" if on_gpu else "gloo"
    for collective in fmt.COLLECTIVES:
        # exact check of a small case first; every rank must agree before timing
        x, out, expected = _torch_check_tensors(torch, collective, 4 * ranks * CHECK_ELEMENTS_PER_RANK, ranks, rank, device)
        if collective != "all-reduce":
            out.fill_(float("nan"))
        _torch_call(dist, collective, x, out)()
        got = (x if collective == "all-reduce" else out).cpu()
        ok = torch.tensor([float(torch.equal(got, expected))], device=device)
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        passed = bool(ok.item())
        check_params = _case(collective, 4 * ranks * CHECK_ELEMENTS_PER_RANK, ranks)
        if file:
            file.checks.append({"id": fmt.record_id("collective", check_params), "params": check_params,
                                "tolerance": 0.0, "passed": passed, "rel_error": None if not passed else 0.0})
        for size in sizes(scale):
            params = _case(collective, size, ranks)
            reason = None if passed else "correctness check failed (exact comparison)"
            if reason is None and not _fits(size, ranks):
                reason = f"{size} B is not a whole number of fp32 elements per rank"
            # every rank decides the same way: the budget is read on rank 0 and broadcast
            go = torch.tensor([1.0 if reason is None and time.monotonic() < deadline else 0.0], device=device)
            dist.broadcast(go, 0)
            if reason is None and not go.item():
                reason = "time budget"
            if reason:
                if file:
                    file.skip(params, reason)
                continue
            x, out = _torch_tensors(torch, collective, size, ranks, rank, device)
            call = _torch_call(dist, collective, x, out)
            samples = _torch_samples(torch, dist, call, scale, on_gpu, device)
            if file:
                record = make_record(params, samples, f"torch.distributed {collective} ({backend})",
                                     f"fp32, sum; {len(samples)} samples of {ITERS[scale]} back-to-back calls after "
                                     f"{WARMUP_CALLS} warm-up calls, averaged over ranks; "
                                     + ("in place" if collective == "all-reduce" else "out of place"))
                file.records.append(record)
                print(f"  {record['id']:<36} {record['latency_s'] * 1e6:10.1f} us  busbw "
                      f"{record['busbw_bytes_per_s'] / 1e9:7.1f} GB/s", flush=True)
                file.write()
            x = out = call = None  # free this size's buffers before the next is allocated
    if file:
        file.provenance["clocks"]["after"] = read_gpu_state() if on_gpu else None
        file.write()


def _torch_samples(torch, dist, call, scale: str, on_gpu: bool, device) -> list[float]:
    for _ in range(WARMUP_CALLS):
        call()
    iters = ITERS[scale]
    samples = []
    for _ in range(SAMPLES[scale]):
        dist.barrier()
        if on_gpu:
            torch.cuda.synchronize(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                call()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                call()
            seconds = time.perf_counter() - t0
        mean = torch.tensor([seconds / iters], dtype=torch.float64, device=device)
        dist.all_reduce(mean)
        samples.append(mean.item() / dist.get_world_size())
    return samples


def _device_info(name: str, count: int, kind: str) -> dict:
    arch = fmt.arch_for_device_name(name) if kind == "gpu" else None
    return {"name": name, "arch": arch, "slug": fmt.device_slug(name, arch), "kind": kind, "count": count}


def _provenance(args, versions: dict, on_gpu: bool, method: str, scale: str) -> dict:
    return {"date": now_utc(), "command": command_line(args.argv), "versions": versions,
            "clocks": {"before": read_gpu_state() if on_gpu else None},
            "source": "accelsim validation/measure_collectives.py",
            "timing": {"method": method, "statistic": "median", "scale": scale, "iters": ITERS[scale],
                       "warmup_calls": WARMUP_CALLS, "cache_flush_bytes": 0}}


def _torch_file(args, ranks: int, on_gpu: bool) -> FamilyFile:
    import torch

    name = torch.cuda.get_device_name(0) if on_gpu else "cpu"
    versions = module_versions("torch", "numpy") | {"cuda": torch.version.cuda}
    if on_gpu:
        versions["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    scale = _scale(args, on_gpu)
    return FamilyFile(args.out / "nccl.json", "collective", _device_info(name, ranks, "gpu" if on_gpu else "cpu"),
                      _provenance(args, versions, on_gpu, "cuda-events" if on_gpu else "perf_counter", scale))


def run_torch(args: argparse.Namespace) -> int:
    import torch

    on_gpu = args.device != "cpu" and torch.cuda.is_available()
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:  # started by torchrun
        rank, ranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        torch_worker(rank, ranks, args, _scale(args, on_gpu), on_gpu, int(os.environ.get("LOCAL_RANK", rank)))
        return 0
    ranks = torch.cuda.device_count() if on_gpu else args.ranks
    scale = _scale(args, on_gpu)
    if ranks < 2:
        file = _torch_file(args, max(ranks, 1), on_gpu)
        _skip_all(file, scale, max(ranks, 1), f"{max(ranks, 1)} device: a collective needs at least 2")
        file.write()
        return 0
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    torch.multiprocessing.spawn(torch_worker, args=(ranks, args, scale, on_gpu), nprocs=ranks, join=True)
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- JAX


def run_jax(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    platform = "cpu" if args.device == "cpu" else None
    try:
        devices = jax.devices(platform) if platform else jax.devices("gpu")
    except RuntimeError as exc:
        devices, problem = [], f"JAX has no GPU backend here ({str(exc).splitlines()[0][:200]})"
    else:
        problem = None
    on_gpu = bool(devices) and devices[0].platform == "gpu"
    scale = _scale(args, on_gpu)
    ranks = len(devices)
    name = devices[0].device_kind if on_gpu else ("cpu" if devices else "no JAX GPU")
    file = FamilyFile(args.out / "jax.json", "collective", _device_info(name, max(ranks, 1), "gpu" if on_gpu or not devices else "cpu"),
                      _provenance(args, module_versions("jax", "jaxlib", "numpy"), on_gpu, "perf_counter-batched", scale))
    if problem or ranks < 2:
        _skip_all(file, scale, max(ranks, 1), problem or f"{ranks} device: a collective needs at least 2")
        file.write()
        return 0
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    shard_map = getattr(jax, "shard_map", None) or __import__("jax.experimental.shard_map", fromlist=["shard_map"]).shard_map
    mesh = Mesh(np.array(devices), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    programs = {
        "all-reduce": ("psum", lambda x: jax.lax.psum(x, "x")),
        "all-gather": ("all_gather", lambda x: jax.lax.all_gather(x, "x", axis=1, tiled=True)),
        "reduce-scatter": ("psum_scatter", lambda x: jax.lax.psum_scatter(x, "x", scatter_dimension=1, tiled=True)),
    }
    deadline = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
    rng = np.random.default_rng(0)
    # timed inputs are drawn on the devices, already sharded (8 GiB cases stay off the host)
    draw = jax.jit(lambda key, shape: jax.random.randint(key, shape, -8, 8).astype(np.float32) + 0.5,
                   static_argnums=1, out_shardings=sharding)
    for collective, (primitive, body) in programs.items():
        kwargs = {"mesh": mesh, "in_specs": P("x"), "out_specs": P("x")}
        try:
            fn = jax.jit(shard_map(body, check_vma=False, **kwargs))
        except TypeError:  # older JAX names the flag check_rep
            fn = jax.jit(shard_map(body, check_rep=False, **kwargs))

        def shape(size):
            return ranks, (size // 4) // (ranks if collective == "all-gather" else 1)

        check_size = 4 * ranks * CHECK_ELEMENTS_PER_RANK
        host = (rng.integers(-8, 8, shape(check_size)) + 0.5).astype(np.float32)
        x = jax.device_put(host, sharding)
        got = np.asarray(fn(x))
        total = host.sum(axis=0)
        expected = {"all-reduce": np.tile(total, (ranks, 1)), "all-gather": np.tile(host.reshape(1, -1), (ranks, 1)),
                    "reduce-scatter": total.reshape(ranks, -1)}[collective]
        passed = got.shape == expected.shape and np.array_equal(got, expected)
        check_params = _case(collective, check_size, ranks)
        file.checks.append({"id": fmt.record_id("collective", check_params), "params": check_params,
                            "tolerance": 0.0, "passed": passed, "rel_error": 0.0 if passed else None})
        for size in sizes(scale):
            params = _case(collective, size, ranks)
            if not passed:
                file.skip(params, "correctness check failed (exact comparison)")
                continue
            if not _fits(size, ranks):
                file.skip(params, f"{size} B is not a whole number of fp32 elements per rank")
                continue
            if time.monotonic() > deadline:
                file.skip(params, "time budget")
                continue
            x = draw(jax.random.key(size), shape(size))
            samples = _jax_samples(jax, lambda: fn(x), scale)
            record = make_record(params, samples, f"jax.lax.{primitive} under shard_map ({devices[0].platform})",
                                 f"fp32; {len(samples)} samples of {ITERS[scale]} back-to-back calls after "
                                 f"{WARMUP_CALLS} warm-up calls, host-timed, ended by block_until_ready")
            file.records.append(record)
            print(f"  {record['id']:<36} {record['latency_s'] * 1e6:10.1f} us", flush=True)
            file.write()
            x = None  # free this size's buffers before the next is allocated
    file.provenance["clocks"]["after"] = read_gpu_state() if on_gpu else None
    file.write()
    return 0


def _jax_samples(jax, call, scale: str) -> list[float]:
    for _ in range(WARMUP_CALLS):
        jax.block_until_ready(call())
    samples = []
    for _ in range(SAMPLES[scale]):
        start = time.perf_counter()
        out = None
        for _ in range(ITERS[scale]):
            out = call()
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / ITERS[scale])
    return samples


# --------------------------------------------------------------------------- command line


def _scale(args: argparse.Namespace, on_gpu: bool) -> str:
    return ("gpu" if on_gpu else "cpu") + ("-quick" if args.quick else "")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = suite_parser(__doc__.split("\n\n")[0], "output folder (nccl.json / jax.json)")
    parser.add_argument("--backend", choices=("torch", "jax"), required=True)
    parser.add_argument("--ranks", type=int, default=2, help="processes on the CPU (gloo); GPUs: all visible")
    args = parser.parse_args(argv)
    if not 1 <= args.ranks <= 64:  # each rank is a process on this machine (one: recorded as skipped)
        parser.error(f"--ranks: expected 1 to 64 processes, got {args.ranks}")
    args.argv = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.argv = argv
    print(f"collectives ({args.backend}) -> {args.out}", flush=True)
    status = run_torch(args) if args.backend == "torch" else run_jax(args)
    path = args.out / ("nccl.json" if args.backend == "torch" else "jax.json")
    if path.is_file():
        print_table(path)
    return status


def print_table(path: Path) -> None:
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    print()
    print(f"{'collective':<16} {'measured':>8} {'skipped':>8}  largest measured (busbw)")
    for collective in fmt.COLLECTIVES:
        records = [r for r in data["records"] if r["params"]["collective"] == collective]
        skipped = [s for s in data["skipped"] if s["params"]["collective"] == collective]
        best = max(records, key=lambda r: r["params"]["bytes"], default=None)
        shown = f"{best['id']}  {best['busbw_bytes_per_s'] / 1e9:.1f} GB/s" if best else (
            skipped[0]["reason"] if skipped else "-")
        print(f"{collective:<16} {len(records):>8} {len(skipped):>8}  {shown}")


if __name__ == "__main__":
    sys.exit(main())
