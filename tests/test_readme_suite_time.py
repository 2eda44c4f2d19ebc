"""The README says how long the test suite takes (a new user waited 8 minutes without
knowing whether that was expected)."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_the_set_up_section_states_the_suite_duration():
    setup = (REPO / "README.md").read_text(encoding="utf-8").split("## A five-minute tour")[0]
    assert "pip install -e '.[test]' && python -m pytest" in setup
    assert re.search(r"about [\d.]+ minutes of CPU time", " ".join(setup.split()))
