"""Timing JAX calls on one device, for ``measure_pallas.py`` and ``measure_collectives.py``.

JAX has no device events to bracket one call with, so each sample is a difference of
two host-timed batches on one device stream: ``batch`` pairs of (cache flush, call),
then ``batch`` flushes alone, each batch ended by ``block_until_ready``. JAX dispatches
asynchronously and the device runs the queue in order, so once the first flush is
queued the device never waits for the host (a flush of 256 MiB takes ~0.1 ms on an
H200, far longer than a dispatch); what is left of dispatch and wake-up is paid once per
batch by both batches and cancels. One sample is::

    (time of batch of flush+call - time of batch of flush) / batch

so every call starts with its inputs out of the L2 (cold cache, as ``measure_gpu.py``
times and the simulator models). On the CPU (``difference=False``) a sample is simply one
synchronised call after a flush, host-timed: the CPU run checks the path, not the speed. A sample that comes out at or under zero means the
call is below what this method resolves: the caller skips the case with that reason.
The samples of the two batch kinds are kept in the record's ``timing`` field.

Needs jax and numpy only (never accelsim).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class JaxPolicy:
    """How much to warm up and how many samples to take, per case."""

    flush_bytes: int
    warmup_calls: int
    batch: int
    """Calls per timed batch."""
    min_samples: int
    max_samples: int
    target_s: float
    """Samples stop near this much device time (flushes included), within the sample bounds."""
    difference: bool = True
    """False: each sample is one synchronised call after a flush, host-timed (the CPU, where
    there is no separate device queue and the difference of two batches is only noise)."""


JAX_POLICIES = {
    "gpu": JaxPolicy(256 * 2**20, 3, 10, 7, 30, 0.3),
    "gpu-quick": JaxPolicy(256 * 2**20, 2, 5, 5, 10, 0.05),
    # A TPU as a GPU: a 256 MiB flush is well past any TPU's on-chip memory (VMEM, CMEM)
    "tpu": JaxPolicy(256 * 2**20, 3, 10, 7, 30, 0.3),
    "tpu-quick": JaxPolicy(256 * 2**20, 2, 5, 5, 10, 0.05),
    # The CPU only runs the path end to end: a small flush keeps the subtraction's noise low.
    "cpu": JaxPolicy(2**20, 1, 1, 3, 5, 0.01, difference=False),
    "cpu-quick": JaxPolicy(2**20, 1, 1, 3, 3, 0.01, difference=False),
}


class BelowResolution(RuntimeError):
    """The call is too short to tell apart from the flush it is timed with."""


class JaxTimer:
    """Batched-difference timing on one JAX device (see the module docstring)."""

    def __init__(self, device: jax.Device, policy: JaxPolicy) -> None:
        self.policy = policy
        self._buffer = jax.device_put(jnp.ones(policy.flush_bytes // 4, jnp.float32), device)
        self._touch = jax.jit(lambda b: b * 1.0001, donate_argnums=0)  # reads and writes every byte
        for _ in range(3):  # compile and warm the flush itself
            self._flush()
        jax.block_until_ready(self._buffer)

    def _flush(self) -> None:
        self._buffer = self._touch(self._buffer)

    def _batch_s(self, run: Callable[[], Any] | None) -> float:
        out = None
        start = time.perf_counter()
        for _ in range(self.policy.batch):
            self._flush()
            if run is not None:
                out = run()
        jax.block_until_ready((self._buffer, out))
        return time.perf_counter() - start

    def warm_up(self, run: Callable[[], Any]) -> float:
        """Calls ``run`` a few times (the first compiles); returns the median synchronised call time."""
        times = []
        for _ in range(max(2, self.policy.warmup_calls)):
            start = time.perf_counter()
            jax.block_until_ready(run())
            times.append(time.perf_counter() - start)
        return statistics.median(times[1:])

    def measure(self, run: Callable[[], Any], call_s: float) -> tuple[list[float], dict]:
        """Samples (seconds per call) and the raw batch times they came from."""
        flush_s = self._batch_s(None) / self.policy.batch
        per_sample = 2 * self.policy.batch * flush_s + self.policy.batch * call_s
        count = int(min(self.policy.max_samples, max(self.policy.min_samples, self.policy.target_s / per_sample)))
        if not self.policy.difference:
            samples = []
            for _ in range(count):
                self._flush()
                jax.block_until_ready(self._buffer)
                start = time.perf_counter()
                jax.block_until_ready(run())
                samples.append(time.perf_counter() - start)
            return samples, {"batch": 1, "method": "perf_counter around one synchronised call"}
        with_call, flush_only, samples = [], [], []
        for _ in range(count):
            with_call.append(self._batch_s(run))
            flush_only.append(self._batch_s(None))
            samples.append((with_call[-1] - flush_only[-1]) / self.policy.batch)
        if min(samples) <= 0:
            raise BelowResolution(
                f"a call is below this timing's resolution (smallest sample {min(samples) * 1e6:.1f} us "
                f"against a flush of {flush_s * 1e6:.1f} us)")
        return samples, {"batch": self.policy.batch, "method": "batched difference", "batch_with_call_s": with_call, "batch_flush_only_s": flush_only}
