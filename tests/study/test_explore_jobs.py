"""explore --jobs: candidates simulated (and captured) in worker processes rank exactly as
in one process."""

from __future__ import annotations

import json
import os

import pytest

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import split_params
from accelsim.study.explore import explore_family
from tests.study.test_explore_captured import MATMUL_TRITON, TRITON_SPACE

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported (see tests/capture)


def _ranking(candidates):
    return [(c.config, c.latency_s, c.error) for c in candidates]


def test_family_candidates_rank_the_same_in_workers():
    chip = load_arch("h100-sxm", ["hbm.bandwidth=2 TB/s"])
    family = get_family("gemm")
    params, _, _ = split_params(family, {"M": "1024", "N": "1024", "K": "1024"})
    here = explore_family(family, params, chip)
    there = explore_family(family, params, chip, jobs=2, chip_source=("h100-sxm", ("hbm.bandwidth=2 TB/s",)))
    assert _ranking(there) == _ranking(here)


def test_workers_need_to_know_where_the_chip_comes_from():
    family = get_family("gemm")
    params, _, _ = split_params(family, {"M": "256", "N": "256", "K": "256"})
    with pytest.raises(ValueError, match="chip_source"):
        explore_family(family, params, load_arch("h100-sxm"), jobs=2)


def test_bad_jobs_is_one_line(cli):
    result = cli("explore", "--arch", "h100-sxm", "--kernel", "gemm", "--param", "M=256", "--param", "N=256",
                 "--param", "K=256", "--jobs", "0")
    assert result.code == 2 and "--jobs" in result.err and len(result.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_captured_candidates_rank_the_same_in_workers(cli, write_yaml):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    space = write_yaml("space.yaml", TRITON_SPACE)
    kernel = f"{MATMUL_TRITON}:run"
    rankings = []
    for jobs in ("1", "2"):
        result = cli("explore", "--arch", "h100-sxm", "--kernel", kernel, "--param", "M=128", "--param", "N=128",
                     "--param", "K=64", "--space", str(space), "--jobs", jobs, "--json")
        assert result.code == 0, result.err
        rankings.append([(r["config"], r.get("latency_s"), r.get("error")) for r in json.loads(result.out)["ranking"]])
    assert rankings[0] == rankings[1]
