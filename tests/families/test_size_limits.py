"""Problems too large to simulate are refused before anything is built (one line, exit
2, no memory blow-up or hour-long run); a config search passes over the configs that
would be too large and keeps the others."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.families import get_family
from accelsim.families.search import best_config
from accelsim.trace.kernel import MAX_PROGRAMS


@pytest.mark.parametrize("arch, args", [
    ("h100", ("--kernel", "gemm", "--param", "M=1000000", "--param", "N=1000000", "--param", "K=1000000")),
    ("tpu-v5e", ("--kernel", "gemm", "--param", "M=1000000", "--param", "N=1000000", "--param", "K=1000000")),
    ("h100", ("--kernel", "copy", "--param", "bytes=100000000000000")),
    ("h100", ("--kernel", "attention", "--param", "batch=100000", "--param", "heads=128", "--param", "seq_q=65536",
              "--param", "seq_kv=65536", "--param", "head_dim=128")),
])
def test_too_many_programs_is_one_line(cli, arch, args):
    result = cli("simulate", "--arch", arch, *args)
    assert result.code == 2 and f"at most {MAX_PROGRAMS:,}" in result.err and result.err.count("\n") == 1


@pytest.mark.parametrize("args", [
    ("--kernel", "gemm", "--param", "M=99999999999999999999999", "--param", "N=1", "--param", "K=1"),
    ("--kernel", "gemm", "--param", "M=1", "--param", "N=1", "--param", f"K={2**48 + 1}"),
    ("--kernel", "copy", "--param", "bytes=1000000000000000"),
    ("--kernel", "elementwise", "--param", "elements=99999999999999999999", "--param", "dtype=bf16"),
    ("--kernel", "softmax", "--param", "rows=1", "--param", f"cols={2**48 + 1}"),
    ("--kernel", "attention", "--param", "batch=1", "--param", "heads=1", "--param", "seq_q=1",
     "--param", f"seq_kv={2**63}", "--param", "head_dim=64"),
])
def test_a_size_past_what_a_trace_holds_is_one_line(cli, args):
    result = cli("simulate", "--arch", "h100", *args)
    assert result.code == 2 and "<= 2^48" in result.err and result.err.count("\n") == 1


def test_the_search_passes_over_configs_with_too_many_programs(monkeypatch):
    import accelsim.trace.kernel as kernel

    family = get_family("elementwise")
    chip = load_arch("h100").for_family("elementwise")
    params = {"elements": 2**26, "dtype": "bf16", "inputs": 2, "outputs": 1}
    programs = lambda config: -(-params["elements"] // config["block_elements"])  # noqa: E731
    free = best_config(family, params, chip)
    # a cap below the free winner's programs: it and every smaller-block config are refused
    cap = max(n for n in map(programs, family.config_space(params, chip)) if n < programs(free.best.config))
    monkeypatch.setattr(kernel, "MAX_PROGRAMS", cap)
    capped = best_config(family, params, chip)
    assert programs(capped.best.config) <= cap
    assert capped.best.sim.latency_s >= free.best.sim.latency_s


def test_split_k_that_leaves_slices_empty_is_refused(cli):
    result = cli("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--param", "split_k=200")
    assert result.code == 2 and "split_k" in result.err and "empty" in result.err
    ok = cli("simulate", "--arch", "h100", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
             "--param", "K=256", "--param", "split_k=3")
    assert ok.code == 0


def test_a_trace_count_past_2_to_the_48_is_refused():
    from accelsim.trace.kernel import parse_trace

    data = {"schema_version": 1, "kernel": {"name": "k", "grid": [1]},
            "tensors": {"X": {"shape": [4], "dtype": "bf16"}},
            "templates": [{"name": "t", "steps": [{"transfers": [{"tensor": "X", "block": [10**20], "bytes": 8}]}]}]}
    with pytest.raises(InputError, match="block"):
        parse_trace(data, "k.json")
    data["templates"][0]["steps"][0]["transfers"][0].update(block=[0], bytes=10**30)
    with pytest.raises(InputError, match="bytes"):
        parse_trace(data, "k.json")


def test_tensors_larger_than_hbm_are_refused_unless_the_capacity_is_a_what_if(cli):
    args = ("simulate", "--arch", "h100", "--kernel", "copy", "--param", "bytes=50000000000")  # 2 x 50 GB
    result = cli(*args)
    assert result.code == 2 and "tensors take 100 GB; h100-sxm has 80 GB of HBM" in result.err
    assert cli(*args, "--set", "hbm.capacity=128 GB").code == 0


@pytest.mark.parametrize("setting, says", [("nodes=99999999999", "accelsim models at most 1,048,576"),
                                           ("node.gpus=99999999", "at most 1024 GPUs in one NVLink domain")])
def test_a_system_past_a_million_chips_is_one_line(cli, setting, says):
    result = cli("simulate", "--system", "h100-ib-cluster", "--set", setting, "--collective", "all-reduce",
                 "--bytes", "1MiB")
    assert result.code == 2 and result.err.count("\n") == 1 and says in result.err
