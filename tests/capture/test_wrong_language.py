"""Capture pointed at a kernel of the other language says so in one line (Pallas capture
of a Triton kernel failed with "0 active drivers", Triton capture of a Pallas kernel with
"no Triton kernel was launched"), also where the file only imports its kernel."""

from __future__ import annotations

import pytest

from accelsim.capture.common import languages_used, load_function
from tests.conftest import REPO

pytest.importorskip("jax")
pytest.importorskip("triton")

TRITON = str(REPO / "kernels" / "triton" / "matmul.py")
PALLAS = str(REPO / "kernels" / "pallas" / "matmul.py")
IMPORTS_TRITON = str(REPO / "examples" / "explore" / "matmul_autotuned.py")
SMALL = ("--param", "M=128", "--param", "N=128", "--param", "K=128")


@pytest.mark.parametrize("path, language", [(TRITON, {"triton"}), (PALLAS, {"pallas"}),
                                            (IMPORTS_TRITON, {"triton"})])
def test_the_language_of_a_kernel_file(path, language):
    assert languages_used(load_function(path, "run")) == language


@pytest.mark.parametrize("tool, path, other", [("pallas", TRITON, "triton"), ("pallas", IMPORTS_TRITON, "triton"),
                                               ("triton", PALLAS, "pallas")])
def test_capture_of_the_other_language_names_the_right_command(cli, tmp_path, tool, path, other):
    result = cli("capture", tool, f"{path}:run", *SMALL, "-o", str(tmp_path / "t.json"))
    (line,) = result.err.splitlines()
    assert result.code == 2 and f"capture it with 'accelsim capture {other}'" in line and len(line) <= 300
    assert not (tmp_path / "t.json").exists()
