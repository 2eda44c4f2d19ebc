"""A search's replay memo: a replay whose inputs equal an earlier one's is reused, and
the result is the one a fresh replay gives."""

from accelsim.arch.model import load_arch
from accelsim.engine.chip import simulate_kernel
from accelsim.families import get_family
from accelsim.families.search import split_params

CAUSAL = {"batch": "1", "heads": "8", "seq_q": "2048", "seq_kv": "2048", "head_dim": "128", "causal": "true"}


def _trace(chip, **config):
    family = get_family("attention")
    params, _, _ = split_params(family, CAUSAL)
    return family.build(params, family.resolve_config(params, {k: str(v) for k, v in config.items()}, chip), chip)


def _summary(sim):
    out = sim.summary()
    out.pop("sim_wall_s")
    return out


def test_a_reused_replay_equals_a_fresh_one():
    chip = load_arch("h100-sxm")
    memo = {}
    deep = _trace(chip, block_m=128, block_n=64, num_stages=4, num_warps=8)
    shallow = _trace(chip, block_m=128, block_n=64, num_stages=3, num_warps=8)
    first = simulate_kernel(deep, chip, replays=memo)
    assert len(memo) == 1
    # one stage fewer changes a latency term that does not bind here: the replay is reused
    second = simulate_kernel(shallow, chip, replays=memo)
    assert len(memo) == 1
    assert _summary(second) == _summary(simulate_kernel(shallow, chip))
    assert second.config["num_stages"] == 3 and first.config["num_stages"] == 4


def test_different_inputs_replay_again():
    chip = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])  # no cap: one replay a kernel
    memo = {}
    trace = _trace(chip, block_m=128, block_n=64, num_stages=4, num_warps=8)
    simulate_kernel(trace, chip, replays=memo)
    faster = load_arch("h100-sxm", ["power.dvfs.boost.enabled=false", "hbm.bandwidth=6.7 TB/s"])
    result = simulate_kernel(trace, faster, replays=memo)
    assert len(memo) == 2
    assert _summary(result) == _summary(simulate_kernel(trace, faster))
    other = _trace(chip, block_m=64, block_n=64, num_stages=4, num_warps=8)
    simulate_kernel(other, chip, replays=memo)
    assert len(memo) == 3


def test_a_timeline_is_never_taken_from_the_memo():
    chip = load_arch("h100-sxm")
    memo = {}
    trace = _trace(chip, block_m=128, block_n=64, num_stages=4, num_warps=8)
    simulate_kernel(trace, chip, replays=memo)
    with_timeline = simulate_kernel(trace, chip, replays=memo, timeline=True)
    assert with_timeline.segments and with_timeline.counters


def test_kernels_of_identical_programs_differ_by_their_count(kernel_trace):
    """Timed per run of identical programs, 5000 and 9000 programs gave the same arrays and
    key: the 9000-program kernel got the 5000-program replay back (112 us for 199 us)."""
    chip = load_arch("h100-sxm")
    steps = [{"transfers": [{"tensor": "X", "block": ["p0"], "bytes": 65536}]}]
    memo = {}
    small = simulate_kernel(kernel_trace([5000], steps), chip, replays=memo)
    large = simulate_kernel(kernel_trace([9000], steps), chip, replays=memo)
    assert len(memo) == 2
    assert large.latency_s == simulate_kernel(kernel_trace([9000], steps), chip).latency_s > small.latency_s
