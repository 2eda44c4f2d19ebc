"""A bad spec fails before any work, with one line naming file:line and field."""

from __future__ import annotations

import json

import pytest

from accelsim.errors import InputError
from accelsim.study.plan import plan_sweep


def _error(path) -> InputError:
    with pytest.raises(InputError) as info:
        plan_sweep(path)
    return info.value


def test_unknown_top_level_field_names_its_line(spec_file):
    path = spec_file("""\
        base: h100-sxm
        workloads:
          - kernel: gemm
            params: {M: 64, N: 64, K: 64}
        metrix: [latency_s]
        """)
    err = _error(path)
    assert err.one_line().startswith(f"{path}:5: metrix: unknown field")


def test_parameter_path_not_in_schema_is_located_at_the_parameter(spec_file):
    path = spec_file("""\
        base: h100-sxm
        parameters:
          hbm.bandwdth: {values: ["1 TB/s"]}
        workloads:
          - kernel: gemm
            params: {M: 64, N: 64, K: 64}
        """)
    err = _error(path)
    assert (err.source, err.line, err.field) == (str(path), 3, "parameters.hbm.bandwdth")
    assert "unknown field 'bandwdth'" in err.message


def test_every_point_is_validated_up_front(spec_file):
    path = spec_file("""\
        base: h100-sxm
        parameters:
          cores.count: {values: [66, 132]}
          hbm.bandwidth: {values: ["1 TB/s", "-2 TB/s"]}
        workloads:
          - kernel: gemm
            params: {M: 64, N: 64, K: 64}
        """)
    err = _error(path)
    assert err.line == 4
    assert "point 1" in err.message and "hbm.bandwidth=-2 TB/s" in err.message


def test_range_needs_num_or_step(spec_file):
    path = spec_file("""\
        base: h100-sxm
        parameters:
          clock: {range: {start: "1 GHz", stop: "2 GHz"}}
        workloads: [{kernel: copy, params: {bytes: 1024}}]
        """)
    err = _error(path)
    assert err.line == 3 and "exactly one of 'num' and 'step'" in err.message


def test_range_units_must_agree(spec_file):
    path = spec_file("""\
        base: h100-sxm
        parameters:
          clock:
            range: {start: "1 GHz", stop: 2, num: 3}
        workloads: [{kernel: copy, params: {bytes: 1024}}]
        """)
    assert "both have a unit" in _error(path).message


@pytest.mark.parametrize("workload, expected", [
    ("{kernel: gemmm, params: {M: 1}}", "unknown kernel family 'gemmm'"),
    ("{kernel: gemm, params: {M: 64, N: 64, K: 64, dtype: fp7}}", "expected one of"),
    ("{kernel: gemm, params: {M: 64, N: 64}}", "missing required parameter"),
    ("{trace: nowhere.json}", "cannot read trace"),
    ("{collective: all-gather, bytes: 1 MiB}", "runs on a system"),
    ("{kernel: gemm, trace: x.json}", "exactly one of the keys"),
    ("{kernel: gemm, params: {M: $m, N: 64, K: 64}}", "unknown variable '$m'"),
])
def test_bad_workloads_are_located(spec_file, workload, expected):
    path = spec_file(f"""\
        base: h100-sxm
        workloads:
          - {{kernel: copy, params: {{bytes: 1024}}}}
          - {workload}
        """)
    err = _error(path)
    assert err.line == 4, err.one_line()
    assert expected in err.message


def test_unknown_metric(spec_file):
    path = spec_file("""\
        base: h100-sxm
        workloads: [{kernel: copy, params: {bytes: 1024}}]
        metrics: [latency_s, speed]
        """)
    err = _error(path)
    assert err.line == 3 and "unknown metric 'speed'" in err.message


def test_unknown_base(spec_file):
    path = spec_file("""\
        base: [h100-sxm, h900]
        workloads: [{kernel: copy, params: {bytes: 1024}}]
        """)
    err = _error(path)
    assert err.line == 1 and "unknown config 'h900'" in err.message


def test_pareto_names_a_metric_or_parameter(spec_file):
    path = spec_file("""\
        base: a100-sxm4-80gb
        parameters: {clock: {values: ["1 GHz", "2 GHz"]}}
        workloads: [{kernel: copy, params: {bytes: 1024}}]
        pareto: {x: clock, y: cost}
        """)
    err = _error(path)
    assert err.line == 4 and "'cost' is neither" in err.message


def test_cli_prints_one_line_and_exits_2(cli, spec_file, tmp_path):
    path = spec_file("""\
        base: h100-sxm
        workloads: [{kernel: copy, params: {bytes: 1024}, count: 3}]
        """)
    result = cli("sweep", str(path), "-o", str(tmp_path / "out"))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert result.err.startswith(f"accelsim: error: {path}:2: workloads[0].count: unknown field")
    assert not (tmp_path / "out").exists()


def test_a_variable_of_the_wrong_type_is_located(spec_file):
    path = spec_file("""\
        base: dgx-h100
        workloads:
          - name: steps
            vars: {b: [1.5]}
            sequence:
              - {collective: all-gather, bytes: $b}
        """)
    err = _error(path)
    assert err.line == 3 and err.message.startswith("with b=1.5: sequence.0.bytes")


@pytest.mark.parametrize("parameters, expected", [
    ('cores.count: {range: {start: 1, stop: 1000000, num: 1000000}}', "less than or equal to 100000"),
    ('clock: {range: {start: "1 GHz", stop: "2 GHz", step: "1 Hz"}}', "'step' gives 1,000,000,001 values"),
    ('{clock: {range: {start: "1 GHz", stop: "2 GHz", num: 1000}}, cores.count: {range: {start: 1, stop: 1000, '
     'num: 1000}}}', "the grid has 1,000,000 points"),
])
def test_a_sweep_too_large_to_run_is_refused_before_any_list_is_built(spec_file, parameters, expected):
    body = f"parameters: {parameters}" if parameters.startswith("{") else f"parameters:\n          {parameters}"
    path = spec_file(f"""\
        base: h100-sxm
        {body}
        workloads: [{{kernel: copy, params: {{bytes: 1024}}}}]
        """)
    assert expected in _error(path).one_line()


@pytest.mark.parametrize("body, expected", [
    ('parameters:\n          clock: {range: {start: "1 GHz", stop: "2 TB/s", num: 3}}\n'
     '        workloads: [{kernel: copy, params: {bytes: 1024}}]', "'start' is in GHz (hz) but 'stop' in TB/s"),
    ('workloads: [{collective: all-reduce, bytes: "-1 GiB"}]', "expected a whole number of bytes"),
    ('workloads: [{collective: all-reduce, bytes: "1 GiB", algorithm: bogus}]', "unknown algorithm 'bogus'"),
    ('workloads: [{sequence: [{collective: all-reduce, bytes: 1024}], memory: [{bytes: "-70 GB"}]}]',
     "memory[0].bytes: expected bytes of 0 or more"),
])
def test_values_a_run_would_refuse_are_refused_up_front(spec_file, body, expected):
    base = "dgx-h100" if "collective" in body else "h100-sxm"
    path = spec_file(f"""\
        base: {base}
        {body}
        """)
    assert expected in _error(path).one_line()


def test_a_bad_random_sampling_names_its_own_field(spec_file):
    path = spec_file("""\
        base: h100-sxm
        sampling: {random: {samples: 0, seed: 0}}
        parameters:
          clock: {values: ["1 GHz", "2 GHz"]}
        workloads: [{kernel: copy, params: {bytes: 1024}}]
        """)
    assert "sampling.random.samples: Input should be greater than or equal to 1" in _error(path).one_line()


def test_a_point_whose_system_is_too_large_is_refused_at_its_parameter(spec_file):
    path = spec_file("""\
        base: h100-ib-cluster
        parameters:
          nodes: {values: [2, 99999999999]}
        workloads: [{collective: all-reduce, bytes: 1 MiB}]
        """)
    err = _error(path)
    assert (err.line, err.field) == (3, "parameters.nodes")
    assert err.message.startswith("point 1 (h100-ib-cluster, nodes=99999999999): the system would have "
                                  "799,999,999,992 chips; accelsim models at most 1,048,576")


@pytest.mark.parametrize("workload, expected", [
    ("{collective: all-reduce, bytes: 1 MiB, ranks: 0}", "ranks must be between 2 and 8 on 'dgx-h100-calibrated', got 0"),
    ("{collective: all-reduce, bytes: 1 MiB, ranks: 9}", "ranks must be between 2 and 8 on 'dgx-h100-calibrated', got 9"),
    ("{collective: all-reduce, bytes: 1 MiB, algorithm: ring/bogus}", "unknown protocol 'bogus'; known: ll, ll128"),
    ("{sequence: [{collective: all-gather, bytes: 1024, ranks: 64}]}", "sequence[0].ranks: ranks must be between 2"),
])
def test_a_collective_the_system_cannot_run_is_refused_up_front(spec_file, workload, expected):
    path = spec_file(f"""\
        base: dgx-h100
        workloads:
          - {{collective: all-gather, bytes: 1 MiB}}
          - {workload}
        """)
    err = _error(path)
    assert (err.line, err.field) == (4, "workloads[1]")
    assert err.message.startswith("point 0 (dgx-h100, no overrides): ") and expected in err.message


def test_a_collective_is_checked_against_every_points_system(spec_file):
    """8 GPUs a node: 16 ranks fit on 2 nodes, not on 1; a TPU torus has no NCCL protocols."""
    path = spec_file("""\
        base: h100-ib-cluster
        parameters:
          nodes: {values: [2, 1]}
        workloads:
          - {collective: all-reduce, bytes: 1 MiB, ranks: 16}
        """)
    assert _error(path).message.startswith("point 1 (h100-ib-cluster, nodes=1): all-reduce 1 MiB: ranks: ranks "
                                           "must be between 2 and 8 on 'h100-ib-cluster', got 16")
    path = spec_file("""\
        base: [dgx-h100, tpu-v5e-4x4]
        workloads:
          - {collective: all-reduce, bytes: 1 MiB, algorithm: ring/ll}
        """, "torus.yaml")
    assert "point 1 (tpu-v5e-4x4, no overrides): all-reduce 1 MiB: algorithm: 'tpu-v5e-4x4' has no NCCL model, " \
           "so no protocol 'll'" in _error(path).message


def _system_trace(path, ops: list, devices: int = 8) -> None:
    path.write_text(json.dumps({"schema_version": 1, "kind": "system_trace", "name": "step", "num_devices": devices,
                                "programs": [{"name": "p", "devices": [f"0-{devices - 1}"], "ops": ops}]}))


ALL_REDUCE = {"name": "ar", "kind": "all-reduce", "bytes": 1048576}


@pytest.mark.parametrize("ops, devices, extra, expected", [
    ([{"name": "k", "kind": "compute", "kernel_trace": "nowhere.json"}], 8, "", "nowhere.json: cannot read trace"),
    ([{"name": "k", "kind": "compute", "family": "gemmm"}], 8, "", "programs[0].ops[0].family: unknown kernel family"),
    ([{"name": "k", "kind": "compute", "family": "gemm", "params": {"M": 64, "N": 64}}], 8, "",
     "programs[0].ops[0].params.K: missing required parameter"),
    ([ALL_REDUCE], 8, ", algorithm: bogus", "unknown algorithm 'bogus'"),
    ([ALL_REDUCE], 8, ", algorithm: ring/bogus", "point 0 (dgx-h100, no overrides): step: algorithm: unknown "
                                                  "protocol 'bogus'"),
    ([ALL_REDUCE], 16, "", "step.json: num_devices: the trace has 16 devices; 'dgx-h100-calibrated' has 8"),
])
def test_a_system_trace_a_replay_would_refuse_is_refused_up_front(spec_file, tmp_path, ops, devices, extra, expected):
    _system_trace(tmp_path / "step.json", ops, devices)
    path = spec_file(f"""\
        base: dgx-h100
        workloads:
          - {{system_trace: step.json{extra}}}
        """)
    err = _error(path)
    assert (err.line, err.field) == (3, "workloads[0]")
    assert expected in err.message, err.one_line()
