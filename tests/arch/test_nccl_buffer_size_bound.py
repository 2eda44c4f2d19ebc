"""A platform's ``network.nccl_buffer_size`` (its ``NCCL_BUFFSIZE``) is a size above 0 and at
most 1 GiB: a larger one is one line naming the field."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError


def test_a_buffer_past_a_gibibyte_is_refused():
    with pytest.raises(InputError, match="nccl_buffer_size.*at most 1 GiB"):
        load_arch("gcp-a3-mega", ["network.nccl_buffer_size=2GiB"])


def test_a_buffer_in_range_loads():
    assert load_arch("gcp-a3-mega", ["network.nccl_buffer_size=16MiB"]) is not None
