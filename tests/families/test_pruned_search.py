"""config=auto's pruned search finds exactly what the full autotune puts first."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import latency_lower_bound_s
from accelsim.families import get_family
from accelsim.families.search import autotune, best_config, split_params

CASES = [
    ("h100-sxm", "gemm", {"M": "1024", "N": "2048", "K": "1024"}),
    ("h100-sxm", "attention", {"batch": "1", "heads": "4", "seq_q": "1024", "seq_kv": "1024", "head_dim": "128",
                               "causal": "true"}),
    ("a100-sxm4-80gb", "gemm", {"M": "512", "N": "512", "K": "512", "dtype": "fp32"}),
    ("tpu-v5e", "gemm", {"M": "1024", "N": "1024", "K": "1024"}),
    ("tpu-v5p", "gemm", {"M": "512", "N": "1536", "K": "4096"}),  # megacore: two TensorCores
    ("tpu-v5e", "gemm", {"M": "2048", "N": "640", "K": "384", "batch": "2"}),  # ragged blocks, a batch axis
    ("h100-sxm", "rmsnorm", {"rows": "1024", "cols": "4096"}),
]


@pytest.mark.parametrize(("arch", "family_name", "given"), CASES)
def test_pruned_search_matches_full_search(arch, family_name, given):
    chip = load_arch(arch)
    family = get_family(family_name)
    params, _, _ = split_params(family, given)
    full = autotune(family, params, chip)
    search = best_config(family, params, chip)
    assert search.best.config == full[0].config
    assert search.best.sim.latency_s == full[0].sim.latency_s
    assert search.searched == len(full)
    assert 1 <= search.simulated <= search.searched


@pytest.mark.parametrize(("arch", "family_name", "given"), CASES)
def test_lower_bound_never_exceeds_the_replay(arch, family_name, given):
    chip = load_arch(arch)
    family = get_family(family_name)
    params, _, _ = split_params(family, given)
    for run in autotune(family, params, chip):
        assert latency_lower_bound_s(run.trace, chip) <= run.sim.latency_s + 1e-12  # replay rounds to ps


@pytest.mark.parametrize(("arch", "family_name", "given"), CASES)
def test_quick_bound_never_exceeds_the_replay(arch, family_name, given):
    chip = load_arch(arch)
    family = get_family(family_name)
    if family.quick_bound is None:
        pytest.skip(f"{family_name} has no quick bound")
    params, _, _ = split_params(family, given)
    for run in autotune(family, params, chip):
        quick = family.quick_bound(params, run.config, chip)
        assert quick <= run.sim.latency_s + 1e-12
