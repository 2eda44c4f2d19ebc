"""validation/maxtext/compile_maxtext.py's options: a per-device batch or a tensor
parallelism below 1 is refused in one line naming its flag (exit 2), before any compile is
started."""

from __future__ import annotations

import sys

import pytest

from tests import conftest

sys.path.insert(0, str(conftest.REPO / "validation" / "maxtext"))

import compile_maxtext  # noqa: E402


@pytest.mark.parametrize(("flag", "value"), [("--batch", "0"), ("--batch", "-3"), ("--tp", "0")])
def test_a_batch_or_tensor_parallelism_below_one_is_refused_naming_the_flag(flag, value, capsys, monkeypatch):
    monkeypatch.setattr(compile_maxtext, "compile_record", lambda *a: pytest.fail("compiled"))
    with pytest.raises(SystemExit) as exited:
        compile_maxtext.main(["--env", "nowhere", flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err and f"got {value}" in err
