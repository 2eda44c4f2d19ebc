"""Fuzzing ``validate`` on a measured step (``accelsim import profile``'s output, which a user
may edit): a mutated step is refused in one line with nothing written, or reported."""

from __future__ import annotations

import json

from hypothesis import given

from accelsim.importers.profile import measured_step, read_profile
from tests.fuzzing import fuzz_settings, mutated, refused_or_ok
from tests.importers.profile_fixtures import KINETO_H100


def _small_step() -> dict:
    """The H100 fixture's step cut to its last all-reduce, residual add (a record) and argmax."""
    step = measured_step(read_profile(KINETO_H100), source=str(KINETO_H100), arch="h100-sxm", device=None,
                         command="test", sha256="0")
    step["kernels"] = [k for k in step["kernels"] if k["class"] in ("elementwise", "collective", None)][-3:]
    kept = {k["record"] for k in step["kernels"]}
    step["records"] = [r for r in step["records"] if r["id"] in kept]
    return step


STEP = _small_step()


def test_the_small_step_validates(cli, tmp_path):
    assert [k["class"] for k in STEP["kernels"]] == ["collective", "elementwise", None] and len(STEP["records"]) == 1
    path = tmp_path / "step.json"
    path.write_text(json.dumps(STEP))
    result = cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    assert "most of the difference" in result.out


@fuzz_settings(examples=6)
@given(step=mutated(STEP))
def test_mutated_measured_steps(cli, tmp_path, step):
    path, out = tmp_path / "step.json", tmp_path / "out"
    path.write_text(json.dumps(step))
    for name in ("report.md", "step.md"):
        (out / name).unlink(missing_ok=True)
    if refused_or_ok(cli("validate", "--arch", "h100-sxm", "--measurements", str(path), "-o", str(out))):
        assert (out / "report.md").is_file()
    else:
        assert not (out / "step.md").exists()
