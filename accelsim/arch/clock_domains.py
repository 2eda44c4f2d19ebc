"""A GPU's L2 bandwidth follows a what-if on the SM clock as it follows DVFS.

The clock kernels run at is the config's ``clock``, or with ``power.dvfs.boost`` on, the
boost clock (:func:`run_clock_hz`). A GPU's ``shared_cache.bandwidth`` is the L2's at the
clock its config runs at. When DVFS or a power cap lowers that clock, the L2's bandwidth
falls with it, except where ``shared_cache.keeps_own_clock_above`` gives the L2 a clock of
its own: it then holds down to that SM clock and falls in proportion below it
(:func:`l2_clock_share`, ``docs/power.md``). A ``--set clock=...`` (or with the boost on,
``--set power.dvfs.boost.clock=...``) moves the clock kernels run at in the same way, so
the L2's bandwidth follows it by the same rule (:func:`l2_after_clock_overrides`), unless
the what-if gives the L2's bandwidth itself: that is the bandwidth at the clock it sets.
A TPU's CMEM has no clock rule (``keeps_own_clock_above`` is refused there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from accelsim.arch import schema

if TYPE_CHECKING:
    from accelsim.arch.loader import Override

BANDWIDTH = ("shared_cache", "bandwidth")


def enabled_boost(spec: schema.ChipSpec) -> schema.Boost | None:
    """The chip's boost section where it is switched on (``power.dvfs.boost.enabled``)."""
    boost = spec.power.dvfs.boost if spec.power else None
    return boost if boost is not None and boost.enabled else None


def run_clock_hz(spec: schema.ChipSpec) -> float:
    """The clock kernels run at, at most: the boost clock with the boost on, else ``clock``."""
    boost = enabled_boost(spec)
    return boost.clock.value if boost else spec.clock.value


def l2_clock_share(clock_hz: float, reference_clock_hz: float, keeps_own_clock_above_hz: float | None) -> float:
    """The share of its bandwidth at SM clock ``reference_clock_hz`` an L2 keeps at SM clock
    ``clock_hz``: the clocks' ratio for an L2 in the SM clock's domain (``None``); for one
    with a clock of its own, none lost down to ``keeps_own_clock_above_hz`` and in
    proportion to the SM clock below it."""
    own = keeps_own_clock_above_hz
    if own is None:
        return clock_hz / reference_clock_hz
    return min(1.0, clock_hz / own) / min(1.0, reference_clock_hz / own)


def l2_after_clock_overrides(before: schema.ChipSpec, after: schema.ChipSpec,
                             overrides: Sequence[Override]) -> schema.ChipSpec:
    """``after`` (``before`` with ``overrides`` set) with a GPU L2's bandwidth moved by
    :func:`l2_clock_share` from the clock ``before`` runs at to the one ``after`` runs at,
    unless an override gives the bandwidth (or the whole ``shared_cache``) itself."""
    cache = after.shared_cache
    if after.family != "gpu" or cache is None or before.shared_cache is None:
        return after
    if any(o.path[:len(BANDWIDTH)] == BANDWIDTH[:len(o.path)] for o in overrides):
        return after
    reference_hz, clock_hz = run_clock_hz(before), run_clock_hz(after)
    own = cache.keeps_own_clock_above.value if cache.keeps_own_clock_above else None
    share = l2_clock_share(clock_hz, reference_hz, own)
    if share == 1.0:
        return after
    bandwidth = cache.bandwidth
    domain = f"a clock of its own down to {own / 1e9:.6g} GHz" if own else "the SM clock's domain"
    derived = bandwidth.model_copy(update={
        "value": bandwidth.value * share, "basis": "derived",
        "source": (f"{bandwidth.value:.6g} B/s with the SMs at {reference_hz / 1e9:.6g} GHz, x {share:.6g} with them "
                   f"at {clock_hz / 1e9:.6g} GHz (the L2 in {domain}; docs/power.md)")})
    return after.model_copy(update={"shared_cache": cache.model_copy(update={"bandwidth": derived})})
