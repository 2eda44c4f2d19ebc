"""config=auto's pruned search finds exactly what the full autotune puts first."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import latency_lower_bound_s, shared_cache_hits
from accelsim.families import get_family
from accelsim.families.search import autotune, best_config, run_config, split_params

CASES = [
    ("h100-sxm", "gemm", {"M": "1024", "N": "2048", "K": "1024"}),
    ("h100-sxm", "attention", {"batch": "1", "heads": "4", "seq_q": "1024", "seq_kv": "1024", "head_dim": "128",
                               "causal": "true"}),
    ("a100-sxm4-80gb", "gemm", {"M": "512", "N": "512", "K": "512", "dtype": "fp32"}),
    ("tpu-v5e", "gemm", {"M": "1024", "N": "1024", "K": "1024"}),
    ("tpu-v5p", "gemm", {"M": "512", "N": "1536", "K": "4096"}),  # megacore: two TensorCores
    ("tpu-v5e", "gemm", {"M": "2048", "N": "640", "K": "384", "batch": "2"}),  # ragged blocks, a batch axis
    ("h100-sxm", "rmsnorm", {"rows": "1024", "cols": "4096"}),
    ("h100-sxm", "elementwise", {"elements": "4194304", "dtype": "bf16", "inputs": "2", "outputs": "1"}),
    # family-scoped values (per-program overhead) and several programs per SM
    ("h100-sxm-calibrated", "attention", {"batch": "2", "heads": "8", "seq_q": "512", "seq_kv": "512",
                                          "head_dim": "64"}),
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
    assert 1 <= search.replayed <= search.simulated


@pytest.mark.parametrize(("arch", "family_name", "given"), CASES)
def test_lower_bound_never_exceeds_the_replay(arch, family_name, given):
    chip = load_arch(arch)
    family = get_family(family_name)
    params, _, _ = split_params(family, given)
    scoped = chip.for_family(family_name)
    for run in autotune(family, params, chip):
        assert latency_lower_bound_s(run.trace, scoped) <= run.sim.latency_s + 1e-12  # replay rounds to ps
        hits = shared_cache_hits(run.trace, scoped)
        if hits is not None:
            assert latency_lower_bound_s(run.trace, scoped, hits) <= run.sim.latency_s + 1e-12


def test_programs_alone_over_the_slots_bound_a_causal_kernel_closely():
    """Causal attention with one program per SM: its matrix work at full rate is far
    below the replay (rows differ in length), the programs' times alone over the SMs are not."""
    chip = load_arch("h100-sxm")
    family = get_family("attention")
    params, _, _ = split_params(family, CASES[1][2] | {"batch": "2", "heads": "8", "seq_q": "2048", "seq_kv": "2048"})
    config = family.resolve_config(params, {"block_m": "64", "block_n": "64", "num_stages": "4", "num_warps": "8"}, chip)
    run = run_config(family, params, config, chip)
    assert run.sim.programs_per_core == 1
    assert latency_lower_bound_s(run.trace, chip) >= 0.75 * run.sim.latency_s


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
