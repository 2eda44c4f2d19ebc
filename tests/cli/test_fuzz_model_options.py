"""Fuzzing ``accelsim model``'s numbers (sequence, batch, every parallel degree, the
microbatch): each combination is refused in one line, quickly, or built into a step
(``--no-replay``) on no more devices than the system has."""

import json
import re
import time

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import AWKWARD_TOKENS, fuzz_settings, refused_or_ok

TINY_MOE = {"model_type": "mixtral", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
            "num_hidden_layers": 4, "num_key_value_heads": 2, "vocab_size": 1024, "num_local_experts": 4,
            "num_experts_per_tok": 2}
OPTIONS = ("--seq", "--batch", "--tp", "--pp", "--cp", "--dp", "--fsdp", "--ep", "--virtual-stages", "--micro-batch")
DEGREES = st.sampled_from(["1", "2", "4", "8", "3", "16"])
NUMBERS = st.one_of(DEGREES, DEGREES, st.sampled_from(["0", "64", "4096", "65536", "16777216", "4194305"]),
                    st.integers(-2, 2**25).map(str), AWKWARD_TOKENS)
"""Mostly degrees that may divide the 8 GPUs, heads and experts; then the ranges' edges and text."""


@fuzz_settings(examples=25)
@given(mode=st.sampled_from(["train", "prefill", "decode"]),
       values=st.dictionaries(st.sampled_from(OPTIONS), NUMBERS, min_size=1, max_size=5))
def test_fuzzed_model_numbers(cli, tmp_path, mode, values):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_MOE))
    args = [arg for flag, value in values.items() for arg in (f"{flag}={value}",)]
    started = time.perf_counter()
    result = cli("model", str(config), "--system", "dgx-h100", "--mode", mode, *args, "--no-replay")
    assert time.perf_counter() - started < 20
    if refused_or_ok(result):
        ops, devices = map(int, re.fullmatch(r"(\d+) ops on (\d+) devices \(not replayed\)\n", result.out).groups())
        assert ops > 0 and 1 <= devices <= 8
