"""Members meet in the n-th collective they issue on a group; mismatches and stalls are
reported after the replay with the op and device, never as a hang."""

from __future__ import annotations

import pytest

from accelsim.errors import InputError
from accelsim.system.replay import replay
from tests.system.conftest import compute, programs


def ar(name: str, nbytes: float, group=(0, 1)) -> dict:
    return {"name": name, "kind": "all-reduce", "bytes": nbytes, "groups": [list(group)]}


def two(ops0: list[dict], ops1: list[dict]):
    return programs([{"name": "r0", "devices": [0], "ops": ops0}, {"name": "r1", "devices": [1], "ops": ops1}],
                    num_devices=2)


def test_sizes_that_disagree_are_an_error(dgx):
    with pytest.raises(InputError, match=r"all-reduce 'x' of 2048 bytes on device 1 meets all-reduce 'x' of 1024"):
        replay(two([ar("x", 1024)], [ar("x", 2048)]), dgx)


def test_a_member_that_never_arrives_is_a_stall_not_a_hang(dgx):
    with pytest.raises(InputError, match=r"ops\[0\]: replay stalled: device 0 waits in all-reduce 'x' on ranks 0,1 "
                                         r"for device 1, which never reached the matching op"):
        replay(two([ar("x", 1024)], [compute("c", 1e-6)]), dgx)


def test_a_cross_device_deadlock_is_reported(dgx):
    """Each rank sends first on a blocking stream: neither reaches its recv."""
    send = lambda peer: {"name": "s", "kind": "send", "peer": peer, "bytes": 1024}  # noqa: E731
    recv = lambda peer: {"name": "r", "kind": "recv", "peer": peer, "bytes": 1024}  # noqa: E731
    with pytest.raises(InputError, match="replay stalled"):
        replay(two([send(1), recv(1)], [send(0), recv(0)]), dgx)


def test_send_and_recv_meet_in_order(dgx):
    ops0 = [{"name": f"s{i}", "kind": "send", "peer": 1, "bytes": 1 << 20} for i in range(3)]
    ops1 = [{"name": f"r{i}", "kind": "recv", "peer": 0, "bytes": 1 << 20} for i in range(3)]
    r = replay(two(ops0, ops1), dgx)
    assert r.comm_instances == 3 and r.devices[0].finish_s == r.devices[1].finish_s


def test_a_permute_moves_every_pair_at_once(dgx):
    pairs = [[i, (i + 1) % 8] for i in range(8)]
    shift = {"name": "shift", "kind": "collective-permute", "bytes": 64 << 20, "pairs": pairs}
    one_pair = {"name": "shift", "kind": "collective-permute", "bytes": 64 << 20, "pairs": [[0, 1]]}
    ring = replay(programs([{"name": "p", "devices": ["0-7"], "ops": [shift]}]), dgx).step_time_s
    single = replay(programs([{"name": "p", "devices": ["0-7"], "ops": [one_pair]}]), dgx).step_time_s
    assert ring == pytest.approx(single, rel=1e-9)  # disjoint up- and downlinks on a switch


def test_tagged_sends_meet_the_recv_with_their_tag(dgx):
    """Rank 1 posts the recv for tag 2 first; by order it would take the tag-1 send (which
    carries another size and fails), by tag each recv takes its own send."""
    ops0 = [{"name": "s1", "kind": "send", "peer": 1, "bytes": 1 << 20, "tag": 1, "async": True},
            {"name": "s2", "kind": "send", "peer": 1, "bytes": 2 << 20, "tag": 2, "async": True}]
    ops1 = [{"name": "r2", "kind": "recv", "peer": 0, "bytes": 2 << 20, "tag": 2, "async": True},
            {"name": "r1", "kind": "recv", "peer": 0, "bytes": 1 << 20, "tag": 1, "async": True}]
    assert replay(two(ops0, ops1), dgx).comm_instances == 2
    untagged = [{k: v for k, v in op.items() if k != "tag"} for op in ops1]
    with pytest.raises(InputError, match="meets"):
        replay(two([{k: v for k, v in op.items() if k != "tag"} for op in ops0], untagged), dgx)


def test_communicators_over_the_same_ranks_match_on_their_own(dgx):
    """Two process groups over ranks 0 and 1, issued in opposite orders: independent
    communicators, so no mismatch (without names they would be one sequence)."""
    a = {"name": "a", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 1]], "communicator": "pg1",
         "stream": "s1"}
    b = {"name": "b", "kind": "all-gather", "bytes": 2 << 20, "groups": [[0, 1]], "communicator": "pg2",
         "stream": "s2"}
    assert replay(two([a, b], [b, a]), dgx).comm_instances == 2
    unnamed = [{k: v for k, v in op.items() if k != "communicator"} for op in (a, b)]
    with pytest.raises(InputError, match="meets"):
        replay(two(unnamed, unnamed[::-1]), dgx)


def test_a_member_waiting_on_other_groups_is_named():
    """Device 1 issued its all-reduce on ranks 0-2, device 0 on ranks 0-1: the message says
    where device 1 waits instead of claiming it never arrived."""
    from accelsim.arch.model import load_arch

    trace = programs([{"name": "a", "devices": [0], "ops": [ar("x", 1024, (0, 1))]},
                      {"name": "b", "devices": [1, 2], "ops": [ar("x", 1024, (0, 1, 2))]}], num_devices=3)
    with pytest.raises(InputError, match=r"for device 1, which waits in all-reduce 'x' on ranks 0-2 \(programs\[1\]"):
        replay(trace, load_arch("dgx-h100"))
