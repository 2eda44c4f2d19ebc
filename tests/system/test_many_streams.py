"""Many streams on one device (issue 29): compute ops sharing a device cost about
linearly in the ops (10^4 ops on 10^4 streams took 29 s), and what stays super-linear,
sharing the links among thousands of collectives in flight at once, is refused before
the run with one line naming the limit and the estimate."""

from __future__ import annotations

import json
import time

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.system.replay import MAX_LINK_SHARING_WORK, replay
from tests.system.conftest import compute, programs


def _one_device(ops: list[dict]):
    return programs([{"name": "one", "devices": [0], "ops": ops}], 1)


def test_ten_thousand_compute_streams_on_one_device_replay_in_seconds(dgx):
    n = 10_000
    trace = _one_device([compute(f"k{i}", 1e-6 * (1 + i % 7), stream=f"s{i}") for i in range(n)])
    started = time.perf_counter()
    r = replay(trace, dgx)
    wall = time.perf_counter() - started
    # every op shares the device with every other: the device is busy for their sum
    assert r.step_time_s == sum(1e-6 * (1 + i % 7) for i in range(n)) or abs(
        r.step_time_s - sum(1e-6 * (1 + i % 7) for i in range(n))) < n * 1e-12
    assert wall < 10, wall  # 29 s before, on an idle machine; about 1 s now on a loaded one


def _async_all_reduces(n: int) -> list[dict]:
    return [{"name": f"c{i}", "kind": "all-reduce", "bytes": 65536 * (1 + i), "stream": f"s{i}"} for i in range(n)]


def test_thousands_of_collectives_in_flight_are_refused_before_the_run():
    torus = load_arch("tpu-v5e-4x4")
    trace = programs([{"name": "p", "devices": ["0-15"], "ops": _async_all_reduces(20_000)}], 16)
    started = time.perf_counter()
    try:
        replay(trace, torus)
    except InputError as exc:
        message = str(exc)
    else:
        raise AssertionError("not refused")
    assert time.perf_counter() - started < 20  # before anything is planned (that took 98 s)
    assert message.startswith("programs[0]: up to 20,000 collectives or transfers in flight")
    assert f"{MAX_LINK_SHARING_WORK:.0e}" in message and "6.4e+09 flow updates" in message
    assert len(message) <= 300 and "\n" not in message


def test_the_refusal_from_the_command_line(cli, tmp_path):
    path = tmp_path / "streams.json"
    path.write_text(json.dumps({"schema_version": 1, "num_devices": 16, "programs": [
        {"name": "p", "devices": ["0-15"], "ops": _async_all_reduces(20_000)}]}))
    result = cli("replay", str(path), "--system", "tpu-v5e-4x4")
    assert result.code == 2 and result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 300 and "past the limit" in lines[0]


def test_collectives_in_sequence_are_not_refused():
    """The same collectives on one stream move data one at a time."""
    torus = load_arch("tpu-v5e-4x4")
    ops = [{**op, "stream": "main"} for op in _async_all_reduces(300)]
    r = replay(programs([{"name": "p", "devices": ["0-15"], "ops": ops}], 16), torus)
    assert r.comm_instances == 300
