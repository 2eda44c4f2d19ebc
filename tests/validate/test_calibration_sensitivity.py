"""Which named parameters a fit moves: one that changes no training prediction is left
out ("not sensitive"), but one that matters only once another leaves its start (the share
of an HBM queueing that starts at zero) is kept."""

from __future__ import annotations

import numpy as np

from accelsim.validate.calibrate import FITTABLE_PARAMETERS, _sensitive

BY_PATH = {p.path: p for p in FITTABLE_PARAMETERS}
QUEUE, SHARE, LOSS = (BY_PATH[k] for k in ("hbm.queueing_latency", "hbm.queueing_unmixed_share",
                                           "hbm.turnaround_loss"))


def _evaluate(cases, overrides):
    """A stand-in for the simulator: a prediction of queueing x share, plus nothing else."""
    values = dict(o.split("=") for o in overrides)
    queue = float(values["hbm.queueing_latency"].split()[0]) if "hbm.queueing_latency" in values else 0.0
    share = float(values.get("hbm.queueing_unmixed_share", 0.0))
    return np.full(len(cases), queue * share)


def _overrides(values):
    return [BY_PATH[k].override(v) for k, v in values.items()]


def test_a_share_of_a_queueing_that_starts_at_zero_is_still_fitted():
    active = [QUEUE, SHARE]
    start = {QUEUE.path: 0.0, SHARE.path: 0.0}
    assert _sensitive(SHARE, active, start, [None], _evaluate, _overrides)
    assert _sensitive(QUEUE, active, start, [None], _evaluate, _overrides)


def test_a_parameter_that_changes_nothing_is_left_out():
    active = [QUEUE, SHARE, LOSS]
    start = {QUEUE.path: 0.0, SHARE.path: 0.0, LOSS.path: 0.0}
    assert not _sensitive(LOSS, active, start, [None], _evaluate, _overrides)
