"""Replica groups in explicit, iota, transposed-iota and mesh-axes form, and how the
collective's mode maps them to device ids."""

import pytest

from accelsim.importers.hlo_groups import (
    GroupSyntaxError,
    device_groups,
    device_pairs,
    group_mode,
    parse_groups,
    parse_pairs,
)


def test_explicit_groups():
    assert parse_groups("{{0,1},{2,3}}") == ((0, 1), (2, 3))
    assert parse_groups("{}") == ()


def test_iota_groups():
    assert parse_groups("[2,4]<=[8]") == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_groups("[1,8]<=[8]") == (tuple(range(8)),)


def test_transposed_iota_groups():
    assert parse_groups("[4,2]<=[2,4]T(1,0)") == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert parse_groups("[2,4]<=[4,2]T(1,0)") == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert parse_groups("[4,2]<=[2,2,2]T(0,2,1)") == ((0, 2), (1, 3), (4, 6), (5, 7))


def test_mesh_axes_groups():
    assert parse_groups("mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}") == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert parse_groups("mesh['x'=2,'y'=4] {'y'}") == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_groups("mesh['x'=2,'y'=4] {'x','y'}") == (tuple(range(8)),)


def test_mesh_sub_axis_and_device_ids():
    # 'y':(pre)size splits axis y (size 4) major to minor, as Shardy does: 'y':(1)2 is its
    # major half (devices 2 apart along y), 'y':(2)2 its minor half (adjacent devices).
    assert parse_groups("mesh['x'=2,'y'=4] {'y':(1)2}") == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert parse_groups("mesh['x'=2,'y'=4] {'y':(2)2}") == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert parse_groups("mesh['x'=2,'y'=2], device_ids=(3,2,1,0) {'x'}") == ((3, 1), (2, 0))


@pytest.mark.parametrize(("opcode", "attrs", "mode"), [
    ("all-reduce", {}, "cross_replica"),
    ("all-reduce", {"channel_id": "1", "use_global_device_ids": "true"}, "flattened_id"),
    ("all-reduce", {"channel_id": "1"}, "cross_replica_and_partition"),
    ("all-gather-start", {"channel_id": "1"}, "cross_replica_and_partition"),
    ("all-to-all", {"channel_id": "1"}, "cross_partition"),
    ("collective-permute", {"channel_id": "1"}, "cross_partition"),
])
def test_group_mode(opcode, attrs, mode):
    assert group_mode(opcode, attrs) == mode


def test_modes_map_to_global_device_ids():
    # 2 replicas x 4 partitions: device = replica * 4 + partition
    assert device_groups(((0, 1),), "cross_replica", 2, 4) == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert device_groups(((0, 1), (2, 3)), "cross_partition", 2, 4) == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert device_groups(((0,), (1,)), "cross_replica_and_partition", 2, 4) == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert device_groups((), "flattened_id", 2, 4) == (tuple(range(8)),)
    assert device_groups((), "cross_replica_and_partition", 1, 8) == (tuple(range(8)),)


def test_source_target_pairs():
    pairs = parse_pairs("{{0,1},{1,0}}")
    assert pairs == ((0, 1), (1, 0))
    assert device_pairs(pairs, "cross_partition", 2, 2) == ((0, 1), (1, 0), (2, 3), (3, 2))


@pytest.mark.parametrize("text", ["[2,4]<=[6]", "{{0,a}}", "[3]<=[3]", "mesh['x'=2] {'z'}", "<0,1>"])
def test_bad_group_text_is_rejected(text):
    with pytest.raises(GroupSyntaxError):
        parse_groups(text)


@pytest.mark.parametrize("text", ["[1,99999999999]<=[99999999999]", "mesh['x'=4096,'y'=4096] {'x'}"])
def test_groups_over_more_devices_than_any_system_are_rejected_before_expanding(text):
    with pytest.raises(GroupSyntaxError, match="at most 1,048,576"):
        parse_groups(text)


def test_ids_outside_the_module_are_rejected():
    with pytest.raises(GroupSyntaxError, match="outside"):
        device_groups(((0, 9),), "flattened_id", 1, 8)
