"""Grid and random sampling: the points, their order, and determinism with a seed."""

from __future__ import annotations

from accelsim.study.plan import plan_sweep

WORKLOAD = "workloads: [{kernel: copy, params: {bytes: 1024}}]\n"


def test_grid_is_the_row_major_product_with_bases_outermost(spec_file):
    plan = plan_sweep(spec_file("""\
        base: [h100-sxm, h200-sxm]
        parameters:
          hbm.bandwidth: {values: ["1 TB/s", "2 TB/s"]}
          cores.count: {range: {start: 64, stop: 128, step: 32}}
        """ + WORKLOAD))
    assert plan.varied == ["arch", "hbm.bandwidth", "cores.count"]
    got = [(p.base, *p.overrides) for p in plan.points]
    assert len(got) == 2 * 2 * 3
    assert got[:4] == [
        ("h100-sxm", "hbm.bandwidth=1 TB/s", "cores.count=64"),
        ("h100-sxm", "hbm.bandwidth=1 TB/s", "cores.count=96"),
        ("h100-sxm", "hbm.bandwidth=1 TB/s", "cores.count=128"),
        ("h100-sxm", "hbm.bandwidth=2 TB/s", "cores.count=64"),
    ]
    assert got[-1] == ("h200-sxm", "hbm.bandwidth=2 TB/s", "cores.count=128")


def test_ranges_keep_the_unit_and_give_base_unit_numbers(spec_file):
    plan = plan_sweep(spec_file("""\
        base: h100-sxm
        parameters:
          hbm.bandwidth: {range: {start: "1 TB/s", stop: "4 TB/s", num: 4}}
          shared_cache.capacity: {log_range: {start: "25 MB", stop: "100 MB", num: 3}}
        """ + WORKLOAD))
    bandwidths = [p.value("hbm.bandwidth") for p in plan.points[::3]]
    assert [v.text for v in bandwidths] == ["1 TB/s", "2 TB/s", "3 TB/s", "4 TB/s"]
    assert [v.number for v in bandwidths] == [1e12, 2e12, 3e12, 4e12]
    assert [p.value("shared_cache.capacity").text for p in plan.points[:3]] == ["25 MB", "50 MB", "100 MB"]


def test_list_values_become_flow_lists(spec_file):
    plan = plan_sweep(spec_file("""\
        base: tpu-v5e
        parameters:
          matrix_unit.shape: {values: [[128, 128], [256, 256]]}
        """ + WORKLOAD))
    assert [p.overrides for p in plan.points] == [["matrix_unit.shape=[128, 128]"], ["matrix_unit.shape=[256, 256]"]]
    assert plan.points[1].value("matrix_unit.shape").label == "256x256"


RANDOM = """\
base: h100-sxm
parameters:
  hbm.bandwidth: {{log_range: {{start: "1 TB/s", stop: "8 TB/s", num: 2}}}}
  cores.count: {{range: {{start: 66, stop: 132, num: 2}}}}
  shared_cache.capacity: {{values: ["25 MB", "50 MB"]}}
sampling: {{random: {{samples: 20, seed: {seed}}}}}
workloads: [{{kernel: copy, params: {{bytes: 1024}}}}]
"""


def _draws(spec_file, seed: int, name: str) -> list[list[str]]:
    return [p.overrides for p in plan_sweep(spec_file(RANDOM.format(seed=seed), name)).points]


def test_random_sampling_is_reproducible_with_its_seed(spec_file):
    first, again, other = _draws(spec_file, 7, "a.yaml"), _draws(spec_file, 7, "b.yaml"), _draws(spec_file, 8, "c.yaml")
    assert len(first) == 20
    assert first == again
    assert first != other


def test_random_draws_stay_in_range_and_integers_stay_integers(spec_file):
    plan = plan_sweep(spec_file(RANDOM.format(seed=1)))
    for p in plan.points:
        assert 1e12 <= p.value("hbm.bandwidth").number <= 8e12
        cores = p.value("cores.count")
        assert cores.text.isdigit() and 66 <= int(cores.text) <= 132
        assert p.value("shared_cache.capacity").text in ("25 MB", "50 MB")


def test_workload_vars_expand_into_one_job_each(spec_file):
    plan = plan_sweep(spec_file("""\
        base: h100-sxm
        workloads:
          - kernel: gemm
            vars: {m: [64, 128], k: [32, 64]}
            params: {M: $m, N: 64, K: $k}
          - name: decode
            vars: {b: [1, 2]}
            sequence:
              - {kernel: gemm, params: {M: $b, N: 64, K: 64}, count: 2}
        """))
    assert [j.name for j in plan.jobs] == [
        "gemm M=64 N=64 K=32", "gemm M=64 N=64 K=64", "gemm M=128 N=64 K=32", "gemm M=128 N=64 K=64",
        "decode b=1", "decode b=2",
    ]
    assert plan.jobs[5].body.sequence[0].params["M"] == 2


def test_a_base_given_as_a_file_is_found_beside_the_spec(spec_file, tmp_path):
    (tmp_path / "chips").mkdir()
    (tmp_path / "chips" / "fast-h100.yaml").write_text(
        "extends: h100-sxm\nname: fast-h100\nhbm:\n  bandwidth: 6 TB/s\n")
    plan = plan_sweep(spec_file("base: chips/fast-h100.yaml\n" + WORKLOAD))
    assert plan.points[0].base == str(tmp_path / "chips" / "fast-h100.yaml")
