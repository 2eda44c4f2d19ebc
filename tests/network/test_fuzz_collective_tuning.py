"""Fuzzing a node's NCCL model: a ``--set`` of any ``collectives`` field (``channel_bandwidth``
too, which the shipped nodes leave out) to an awkward value is refused in one line, or a
ring or tree all-reduce of it takes a finite, positive time."""

import json
import math
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import AWKWARD, fuzz_settings, leaf_paths, refused_or_ok

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "dgx-h100-published"
TUNING = yaml.safe_load((ROOT / "arch_configs" / "systems" / f"{SYSTEM}.yaml").read_text())["collectives"]


SET_PATHS = sorted({*(f"collectives.{p}" for p in leaf_paths(TUNING)), "collectives.channel_bandwidth",
                    "collectives.protocols.ll.nope"})


@fuzz_settings(examples=20)
@given(path=st.sampled_from(SET_PATHS), value=AWKWARD, algorithm=st.sampled_from(["ring", "tree"]))
def test_a_set_of_any_collectives_field(cli, path, value, algorithm):
    text = value if isinstance(value, str) else json.dumps(value)
    result = cli("simulate", "--system", SYSTEM, "--collective", "all-reduce", "--bytes", "64KiB",
                 "--algorithm", algorithm, "--json", "--set", f"{path}={text}")
    if refused_or_ok(result):
        latency = json.loads(result.out)["latency_s"]
        assert math.isfinite(latency) and latency > 0
