"""A config file in the built-in folder that does not parse (a chip a user added there,
say) fails a lookup by name in one line naming that file, not with a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from accelsim.arch import loader
from accelsim.arch.model import load_arch
from accelsim.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_a_broken_file_in_the_builtin_folder_is_named(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "arch_configs", tmp_path / "configs")
    broken = tmp_path / "configs" / "gpu" / "my-chip.yaml"
    broken.write_text("extends: h100-sxm\nname: my-chip\nhbm:\n  bandwidth: {value: 4 TB/s, source: x\n")
    monkeypatch.setattr(loader, "builtin_dir", lambda: tmp_path / "configs")
    loader._builtin_index.cache_clear()
    try:
        with pytest.raises(InputError) as info:
            load_arch("h100-sxm")
        line = info.value.one_line()
        assert str(broken) in line and "YAML syntax error" in line and "\n" not in line
    finally:
        loader._builtin_index.cache_clear()
