"""Fuzzing ``compile tpu``'s ``--topology`` and ``--mesh`` texts: each is refused with an
InputError of one short line, or read into a slice of 1 to 8,960 chips and mesh axes
whose sizes multiply to its chips."""

import math

from hypothesis import example, given
from hypothesis import strategies as st

from accelsim.capture.tpu_compile import MAX_CHIPS, parse_mesh, parse_topology
from accelsim.errors import MAX_LINE_CHARS, InputError
from tests.fuzzing import AWKWARD_TOKENS, fuzz_settings

SIZES = st.one_of(AWKWARD_TOKENS, st.integers(-1, 20_000).map(str), st.sampled_from(["2", "4", "16", "٤", "4 "]))
TOPOLOGIES = st.builds(lambda gen, sizes, sep: gen + ":" + sep.join(sizes), st.sampled_from(["v4", "v5e", "v5p", "v6e",
                                                                                             "v9", "", "V5E"]),
                       st.lists(SIZES, min_size=0, max_size=4), st.sampled_from(["x", "X", ",", "xx"]))
MESHES = st.lists(st.tuples(st.sampled_from(["data", "model", "", "1x", "data"]), SIZES), max_size=4).map(
    lambda axes: ",".join(f"{name}={size}" for name, size in axes))


def _refused(call) -> object | None:
    try:
        return call()
    except InputError as exc:
        assert len(exc.one_line()) <= MAX_LINE_CHARS and "\n" not in exc.one_line()
        return None


@fuzz_settings(examples=200)
@given(topology=TOPOLOGIES | AWKWARD_TOKENS, mesh=MESHES | AWKWARD_TOKENS)
@example(topology="v5e:" + "9" * 5000 + "x4", mesh="data=16")  # past int()'s 4,300 digits (a ValueError once)
@example(topology="v5e:4x4", mesh="data=" + "9" * 5000)
def test_fuzzed_topology_and_mesh(topology, mesh):
    slice_ = _refused(lambda: parse_topology(topology))
    if slice_ is None:
        return
    assert 1 <= slice_.chips <= MAX_CHIPS and all(d >= 1 for d in slice_.shape)
    axes = _refused(lambda: parse_mesh(mesh, slice_.chips))
    if axes is not None:
        assert math.prod(size for _, size in axes) == slice_.chips
