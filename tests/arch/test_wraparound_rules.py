"""A torus config may state its generation's wraparound rule instead of a list: v5e and
v6e close axes of 16 chips, v4 and v5p every axis of a slice of whole 4x4x4 cubes. A
what-if slice shape then wraps as that generation would; a list still says it axis by axis."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError

COMMITTED = {  # what the configs listed axis by axis before they stated the rule
    "tpu-v5e-16x16": (True, True), "tpu-v5e-4x4": (False, False), "tpu-v6e-16x16": (True, True),
    "tpu-v6e-8x8": (False, False), "tpu-v4-4x4x4": (True,) * 3, "tpu-v5p-4x4x4": (True,) * 3,
    "tpu-v5p-4x4x8": (True,) * 3, "tpu-v5p-8x8x8": (True,) * 3, "tpu7x-4x4x4": (True,) * 3,
}


@pytest.mark.parametrize("name, wraps", COMMITTED.items())
def test_the_committed_slices_wrap_as_they_did(name, wraps):
    assert load_arch(name).wraparound == wraps


@pytest.mark.parametrize("name, shape, wraps", [
    ("tpu-v5e-16x16", "[8,16]", (False, True)),  # the scaling book's example: an 8x16 wraps its long axis
    ("tpu-v5e-16x16", "[8,8]", (False, False)),
    ("tpu-v5e-4x4", "[16,16]", (True, True)),
    ("tpu-v5p-4x4x4", "[2,2,4]", (False, False, False)),  # smaller than a cube: no wraparound
    ("tpu-v5p-4x4x4", "[4,4,12]", (True, True, True)),
    ("tpu-v5p-4x4x4", "[4,4,6]", (False, False, False)),
    ("tpu-v5p-4x4x4", "[8]", (False,)),  # not a cube at all
])
def test_a_what_if_shape_wraps_as_the_generation_would(name, shape, wraps):
    assert load_arch(name, [f"shape={shape}"]).wraparound == wraps


def test_a_list_still_says_it_axis_by_axis_and_must_match_the_shape():
    assert load_arch("tpu-v5p-4x4x4", ["wraparound=[true,true,false]"]).wraparound == (True, True, False)
    with pytest.raises(InputError, match="'wraparound' has 2 entries but 'shape' has 3"):
        load_arch("tpu-v5p-4x4x4", ["wraparound=[true,true]"])
    with pytest.raises(InputError, match="wraparound: expected a list of booleans, one per axis, or a rule: axes "
                                         "of 16, full cubes; got 'axes of 8'"):
        load_arch("tpu-v5p-4x4x4", ["wraparound=axes of 8"])


def test_a_multislice_takes_its_slices_rule():
    assert load_arch("tpu-v5e-16x16-x4", ["slice.shape=[8,16]"]).slice.wraparound == (False, True)
