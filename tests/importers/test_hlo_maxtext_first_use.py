"""The wait-at-first-use what-if on a program the TPU compiler scheduled: MaxText's 64B
step for v5p-128 at batch 3 (committed HLO), where XLA's memory-aware scheduler waits for
most collective-permutes right after their start. Waited for where their results are
first read instead, over a second of its exposed communication hides behind the work
scheduled in between; the compute is the same ops, priced the same."""

import json
import sys
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.importers.hlo import import_hlo
from accelsim.system.replay import ReplayOptions, replay

MAXTEXT = Path(__file__).parents[2] / "validation" / "maxtext"
sys.path.insert(0, str(MAXTEXT))

from maxtext_v5p import TORUS  # noqa: E402

CHIPS = 64


@pytest.fixture(scope="module")
def replays():
    system = load_arch("tpu-v5p-4x4x8", [f"shape={json.dumps(TORUS[CHIPS])}"])
    trace = import_hlo(MAXTEXT / "compiled" / "maxtext-64b-v5p-128.hlo.txt.gz", system_devices=CHIPS,
                       system="tpu-v5p")
    return (replay(trace, system).result(),
            replay(trace, system, options=ReplayOptions(wait_at_first_use=True)).result())


def test_waiting_at_first_use_hides_what_the_schedule_waited_for_early(replays):
    scheduled, first_use = replays
    assert scheduled.exposed_comm_s - first_use.exposed_comm_s > 1.0
    assert scheduled.step_time_s - first_use.step_time_s == pytest.approx(
        scheduled.exposed_comm_s - first_use.exposed_comm_s, rel=0.02)


def test_the_compute_is_untouched(replays):
    scheduled, first_use = replays
    assert first_use.compute_s == pytest.approx(scheduled.compute_s, rel=1e-9)


def test_what_the_dependencies_force_stays_exposed(replays):
    """Synchronous all-gathers and permutes read by the next op: over a second."""
    _, first_use = replays
    assert first_use.exposed_comm_s > 1.0
