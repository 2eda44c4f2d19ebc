"""Which instance each device of a program joins (``program.comm_joins``), and the
instances a class of its devices joins (``layout._instances_joined``): a class of every
device of the program takes the counts shared by the ops on its groups, which must be
what counting its devices one by one gives."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from accelsim.system.layout import _instances_joined
from accelsim.system.program import compile_program
from tests.system.conftest import programs

OPS = [
    {"name": "ar0", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 2], [1, 3], [4, 5, 6, 7]]},
    {"name": "ag", "kind": "all-gather", "bytes": 1 << 20, "groups": [[4, 5, 6, 7], [0, 1, 2, 3]]},
    {"name": "ar1", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 2], [1, 3], [4, 5, 6, 7]]},
    {"name": "ar2", "kind": "all-reduce", "bytes": 1 << 20, "groups": [[0, 2], [1, 3], [4, 5, 6, 7]],
     "communicator": "dp"},
    {"name": "perm", "kind": "collective-permute", "bytes": 1 << 20, "pairs": [[1, 0], [0, 1], [5, 4]]},
]


@pytest.fixture(scope="module")
def prog():
    trace = programs([{"name": "p", "devices": [7, "0-6"], "ops": OPS}])
    return compile_program(0, trace.programs[0], {})


def one_by_one(prog, i, devices):
    joined = {}
    for d in devices:
        found = prog.comm_joins[i].of(prog.position[d])
        if found is not None:
            key, ranks = found
            joined[key] = (ranks, joined.get(key, (ranks, 0))[1] + 1)
    return joined


@pytest.mark.parametrize("i", range(len(OPS)))
def test_a_class_of_every_device_counts_as_its_devices_do(prog, i):
    every = SimpleNamespace(prog=prog, devices=prog.devices)
    joined = _instances_joined(every, i)
    expected = one_by_one(prog, i, prog.devices)
    assert joined == expected
    assert list(joined) == list(expected)  # in the order the devices first meet them


@pytest.mark.parametrize("i", range(len(OPS)))
def test_a_class_of_one_device_joins_its_own_instance(prog, i):
    for d in prog.devices:
        assert _instances_joined(SimpleNamespace(prog=prog, devices=[d]), i) == one_by_one(prog, i, [d])


def test_the_nth_op_on_a_group_and_communicator_is_its_nth_instance(prog):
    first, again, other = (prog.comm_joins[i].of(prog.position[0])[0] for i in (0, 2, 3))
    assert first == (("coll", (0, 2), None), 0)
    assert again == (("coll", (0, 2), None), 1)
    assert other == (("coll", (0, 2), "dp"), 0)
    assert prog.comm_joins[1].of(prog.position[0])[0] == (("coll", (0, 1, 2, 3), None), 0)


def test_a_permute_joins_only_the_devices_of_its_pairs(prog):
    joins = prog.comm_joins[4]
    assert [d for d in prog.devices if joins.of(prog.position[d]) is not None] == [0, 1, 4, 5]
    assert joins.counts == [4]
