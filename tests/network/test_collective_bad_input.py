"""Bad collective requests fail with one clear InputError, never a traceback or a hang."""

import pytest

from accelsim.errors import InputError
from accelsim.network import make_request, simulate_collective


@pytest.mark.parametrize("kwargs, expected", [
    ({"group": [0, 0, 1]}, "names a rank twice"),
    ({"group": [0, 9]}, "not on"),
    ({"group": [3]}, "at least 2 ranks"),
    ({"ranks": 1}, "between 2 and 8"),
])
def test_bad_groups(ideal_node, kwargs, expected):
    with pytest.raises(InputError, match=expected):
        make_request(ideal_node(), "all-reduce", 1024, **kwargs)


def test_send_recv_needs_two_ranks(ideal_node):
    with pytest.raises(InputError, match="give 2 ranks"):
        simulate_collective(ideal_node(), "send-recv", 1024, group=[0, 1, 2])


def test_permute_pairs_stay_in_the_group(ideal_node):
    from accelsim.network.collectives import Request
    from accelsim.network.simulate import plan_for

    with pytest.raises(InputError, match="not within the group"):
        plan_for(ideal_node(), Request(kind="collective-permute", size_bytes=8, ranks=(0, 1), pairs=((0, 5),)))


@pytest.mark.parametrize("algorithm, expected", [
    ("halving-doubling", "power-of-two"), ("nvls/ll", "no NCCL model"), ("ring/ll", "no NCCL model"),
    ("tree", "does not do all-gather"), ("hierarchical", "several nodes"), ("bogus", "unknown algorithm"),
    ("auto/ll", "auto chooses the protocol too"),
])
def test_algorithms_that_do_not_apply_say_why(ideal_node, algorithm, expected):
    kind = "all-gather" if algorithm == "tree" else "all-reduce"
    with pytest.raises(InputError, match=expected):
        simulate_collective(ideal_node(), kind, 1024, algorithm, group=[0, 1, 2, 3, 4, 5])


def test_zero_bytes_is_refused(ideal_node):
    with pytest.raises(InputError, match="positive"):
        make_request(ideal_node(), "all-reduce", 0)


def test_ici_links_that_do_not_spread_evenly_are_refused(cli):
    """Floored before: 1 to 7 links on a 2-D torus all ran as 4 (one per neighbour)."""
    args = ("simulate", "--system", "tpu-v5e-4x4", "--collective", "all-reduce", "--bytes", "1MiB")
    result = cli(*args, "--set", "chip.interconnect.links=7")
    assert result.code == 2 and result.err.count("\n") == 1 and "expected a multiple of 4, got 7" in result.err
    assert cli(*args, "--set", "chip.interconnect.links=8").code == 0
