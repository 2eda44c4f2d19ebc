"""Fuzzing ``--param``: a kernel family given awkward parameter and config values (and
unknown names, and ``config=auto``) is refused in one line, or simulated no faster than
the chip's peaks allow."""

import json

from hypothesis import given
from hypothesis import strategies as st

from accelsim.arch.model import load_arch
from tests.fuzzing import AWKWARD_TEXT, assert_within_peaks, fuzz_settings, refused_or_ok

FAMILY_PARAMS = {
    "gemm": ["M", "N", "K", "dtype", "batch", "groups", "block_m", "num_warps", "split_k", "config"],
    "attention": ["batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "causal", "pass", "block_m"],
    "rmsnorm": ["rows", "cols", "dtype", "block_size"],
    "elementwise": ["elements", "dtype", "inputs", "outputs"],
    "copy": ["bytes"],
}
VALUES = st.one_of(
    st.sampled_from(["1", "2", "3", "64", "100", "128", "4096", "0", "-1", "2.5", "1e6", "1e30", "9" * 40,
                     "fp8", "bf16", "int4", "true", "auto", "bwd"]),
    AWKWARD_TEXT,
)


@st.composite
def params(draw):
    family = draw(st.sampled_from(sorted(FAMILY_PARAMS)))
    names = draw(st.lists(st.sampled_from([*FAMILY_PARAMS[family], "nope"]), max_size=4, unique=True))
    return family, [f"{name}={draw(VALUES)}" for name in names]


@fuzz_settings(examples=25)
@given(case=params(), arch=st.sampled_from(["h100-sxm", "tpu-v5e"]))
def test_awkward_parameters(cli, case, arch):
    family, given_params = case
    args = [arg for param in given_params for arg in ("--param", param)]
    result = cli("simulate", "--arch", arch, "--kernel", family, *args, "--json")
    if refused_or_ok(result):
        assert_within_peaks(json.loads(result.out), load_arch(arch))
