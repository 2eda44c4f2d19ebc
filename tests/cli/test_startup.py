"""Starting the CLI stays cheap: building the parser loads neither matplotlib (plots import
it when they are drawn) nor jax, torch or triton (capture imports them when it runs)."""

from __future__ import annotations

import subprocess
import sys


def test_building_the_parser_loads_no_heavy_modules():
    code = ("import sys\nfrom accelsim.cli.main import build_parser\nbuild_parser()\n"
            "print(' '.join(sorted(m for m in ('matplotlib', 'jax', 'torch', 'triton') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == ""
