"""Chakra execution traces (JSON form of et_def.proto) become replayable system traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.importers.chakra import import_chakra
from accelsim.system.replay import replay

FIXTURE = Path(__file__).parent / "chakra_fixture"
RANKS = [FIXTURE / "rank0.json", FIXTURE / "rank1.json"]


@pytest.fixture(scope="module")
def trace():
    return import_chakra(RANKS)


def ops_by_name(trace, rank):
    return {op.name.split(":", 1)[1]: op for op in trace.programs[rank].ops}


def test_both_json_shapes_read_to_the_same_structure(trace):
    assert trace.num_devices == 2 and [p.device_ids() for p in trace.programs] == [[0], [1]]
    for rank in (0, 1):
        ops = ops_by_name(trace, rank)
        assert ops["grad_allreduce"].kind == "all-reduce" and ops["grad_allreduce"].bytes == 64 * 2**20
        assert ops["grad_allreduce"].groups == [[0, 1]] and ops["grad_allreduce"].is_async
        assert ops["fwd_matmul"].duration_s == pytest.approx(200e-6)
        assert ops["optimizer"].deps == [ops["grad_allreduce"].name]


def test_node_kinds_and_attributes(trace):
    r0, r1 = ops_by_name(trace, 0), ops_by_name(trace, 1)
    assert r0["bwd_matmul"].flops == 2**37 and r0["bwd_matmul"].bytes == 96 * 2**20  # roofline inputs
    assert (r0["send_act"].kind, r0["send_act"].peer) == ("send", 1)
    assert (r1["recv_act"].kind, r1["recv_act"].peer) == ("recv", 0)
    assert r1["log"].flops == 0  # a CPU op takes no device time
    assert r0["optimizer"].ctrl_deps == [r0["send_act"].name]


def test_nodes_come_out_in_dependency_order(trace):
    names = [op.name for op in trace.programs[1].ops]
    assert names.index("12:grad_allreduce") < names.index("11:optimizer")


def test_the_import_replays(trace):
    r = replay(trace, load_arch("dgx-h100"))
    assert r.comm_instances == 2  # the all-reduce and the send/recv pair
    optimizer_end = r.step_time_s
    assert optimizer_end > 400e-6 + 200e-6 + 50e-6  # rank 1: fwd, bwd, then optimizer at least


def write(tmp_path, nodes) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(nodes))
    return path


@pytest.mark.parametrize("nodes, expected", [
    ([{"id": 1, "type": "COMP_NODE", "dataDeps": ["9"]}], "node 1 depends on unknown node 9"),
    ([{"id": 1, "type": 4, "data_deps": [2]}, {"id": 2, "type": 4, "data_deps": [1]}], "dependency cycle through node 1"),
    ([{"id": 1, "type": "GPU_NODE"}], "node 1.type: unknown value 'GPU_NODE'"),
    ([{"id": 1, "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "3"}]}],
     "node 1.attr.comm_type: GATHER is not modelled"),
    ([{"id": 1, "type": "COMM_SEND_NODE", "attr": [{"name": "comm_size", "int64Val": "8"}]}],
     "a COMM_SEND_NODE needs the comm_dst attribute"),
    ([{"id": 1, "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"},
                                                    {"name": "comm_size", "int64Val": "8"},
                                                    {"name": "pg_name", "stringVal": "tp"}]}],
     "process group 'tp' has no ranks; pass --group tp=RANKS"),
    ([{"id": 1, "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"}]}],
     "node 1.attr: collective ALL_REDUCE needs the comm_size attribute"),
    ([], "no nodes: expected a rank's Chakra execution trace"),
    ([{"id": 1, "type": 4}, {"id": 1, "type": 4}], "duplicate node id 1"),
    ([{"id": 1, "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"},
                                                    {"name": "comm_size", "int64Val": "-5"}]}],
     "node 1.attr.comm_size: expected an integer of at least 0, got -5"),
    ([{"id": 1, "type": "COMP_NODE", "duration_micros": 1e400}], "Infinity is not a JSON number"),
    ([{"id": 1, "type": "COMP_NODE", "attr": {"name": "x"}}], "node 1.attr: expected a list, got dict"),
    ([{"id": 1, "type": "COMP_NODE", "attr": ["x"]}], "node 1.attr[0]: expected an attribute object, got str"),
    ([{"id": 1, "type": "COMP_NODE", "data_deps": 12}], "[0].data_deps: expected a list, got int"),
    ([{"id": 1, "type": "COMM_RECV_NODE", "attr": [{"name": "comm_src", "int32Val": -1}]}],
     "node 1.attr.comm_src: expected an integer of at least 0, got -1"),
    ([{"id": 1, "type": "COMM_SEND_NODE", "attr": [{"name": "comm_dst", "int32Val": 1}]}],
     "node 1.attr.comm_dst: rank 1 is past the 1 ranks of the files given"),
    ([{"id": 1, "type": "COMP_NODE", "attr": [{"name": "tensor_size", "int64Val": "-5"}]}],
     "node 1.attr.tensor_size: expected an integer of at least 0, got -5"),
    ({"nodes": None}, "nodes: expected a list of node objects, got NoneType"),
    ([{"id": 1, "type": "COMP_NODE", "duration_micros": 5}, {"type": "COMP_NODE"}, {"type": "COMP_NODE"}],
     "duplicate node id 0"),
])
def test_bad_nodes_are_one_line_errors(tmp_path, nodes, expected):
    with pytest.raises(InputError) as info:
        import_chakra([write(tmp_path, nodes)])
    assert expected in info.value.one_line() and "r.json" in info.value.one_line()


def test_cli_imports_and_names_groups(cli, tmp_path):
    nodes = [{"id": 1, "type": "COMM_COLL_NODE", "attr": [
        {"name": "comm_type", "int64Val": "2"}, {"name": "comm_size", "int64Val": "1048576"},
        {"name": "pg_name", "stringVal": "tp"}]}]
    files = []
    for rank in range(4):
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps(nodes))
        files.append(str(path))
    out = tmp_path / "t.json"
    result = cli("import", "chakra", *files, "--group", "tp=0-3", "-o", str(out))
    assert result.code == 0, result.err
    assert "4 ops in 4 programs on 4 devices" in result.out
    data = json.loads(out.read_text())
    assert data["programs"][2]["ops"][0]["groups"] == [[0, 1, 2, 3]]
    assert cli("replay", str(out), "--system", "dgx-h100").code == 0


def test_an_inconsistent_import_blames_the_inputs_not_the_output(cli, tmp_path):
    from pathlib import Path

    rank0 = Path(__file__).parent / "chakra_fixture" / "rank0.json"
    out = tmp_path / "x.json"
    result = cli("import", "chakra", str(rank0), "-o", str(out))  # rank 1's file forgotten
    assert result.code == 2 and result.err.startswith(f"accelsim: error: {rank0}: ")
    assert "one file per rank" in result.err and not out.exists()


def stream_file(tmp_path, name, objects) -> Path:
    """What chakra_jsonizer writes: GlobalMetadata, then one object per node, back to back,
    fields at their default value left out (node 0 has no "id")."""
    path = tmp_path / name
    path.write_text("".join(json.dumps(o, indent=1) for o in objects))
    return path


def test_a_node_without_id_is_node_0(tmp_path):
    path = stream_file(tmp_path, "r.json", [
        {"version": "0.0.4"},
        {"name": "big", "type": "COMP_NODE", "durationMicros": "500"},
        {"id": "1", "name": "small", "type": "COMP_NODE", "durationMicros": "5", "dataDeps": ["0"]},
    ])
    ops = import_chakra([path]).programs[0].ops
    assert [op.name for op in ops] == ["0:big", "1:small"] and ops[1].deps == ["0:big"]


def test_host_ops_do_not_queue_behind_kernels(tmp_path):
    """PyTorch's shape: a zero-time CPU op (record_param_comms) launches the all-reduce; a
    400 us GEMM listed before it runs on its CUDA stream. The CPU op must not wait for the
    GEMM, so the all-reduce overlaps it."""
    def rank(r):
        return stream_file(tmp_path, f"r{r}.json", [
            {"version": "0.0.4"},
            {"name": "aten::mm", "type": "COMP_NODE", "attr": [{"name": "is_cpu_op", "boolVal": True}]},
            {"id": "1", "name": "gemm", "type": "COMP_NODE", "durationMicros": "400", "dataDeps": ["0"],
             "attr": [{"name": "is_cpu_op", "boolVal": False}, {"name": "stream", "int64Val": "7"}]},
            {"id": "2", "name": "record_param_comms", "type": "COMP_NODE", "dataDeps": ["0"],
             "attr": [{"name": "is_cpu_op", "int64Val": "1"}]},
            {"id": "3", "name": "nccl", "type": "COMM_COLL_NODE", "dataDeps": ["2"],
             "attr": [{"name": "comm_type", "int64Val": "0"}, {"name": "comm_size", "int64Val": "67108864"},
                      {"name": "pg_name", "stringVal": "0"}]},
        ])
    trace = import_chakra([rank(0), rank(1)])
    streams = {op.name.split(":", 1)[1]: op.stream for op in trace.programs[0].ops}
    assert streams == {"aten::mm": "host", "gemm": "stream 7", "record_param_comms": "host", "nccl": "comm"}
    ar = trace.programs[0].ops[-1]
    assert ar.groups == [[0, 1]] and ar.communicator == "0"  # PyTorch's default group: every rank
    r = replay(trace, load_arch("dgx-h100"))
    assert r.step_time_s < 400e-6 + 150e-6  # the all-reduce (about 196 us alone) overlaps the GEMM


def test_process_groups_come_from_the_traces_metadata_node(tmp_path):
    pgs = [{"pg_name": "0", "ranks": []}, {"pg_name": "tp", "ranks": [0, 1]}]
    values = str([json.dumps(pgs)])  # the converter writes Python's repr of the JSON text
    def rank(r):
        return stream_file(tmp_path, f"r{r}.json", [
            {"version": "0.0.4"},
            {"id": "2", "name": "## process_group:init ##", "type": "METADATA_NODE", "inputs": {"values": values}},
            {"id": "3", "type": "COMM_COLL_NODE", "dataDeps": ["2"],
             "attr": [{"name": "comm_type", "int64Val": "0"}, {"name": "comm_size", "int64Val": "1024"},
                      {"name": "pg_name", "stringVal": "tp"}]},
        ])
    trace = import_chakra([rank(r) for r in range(4)])
    assert trace.programs[3].ops[-1].groups == [[0, 1]]
    assert import_chakra([rank(r) for r in range(4)], {"tp": [0, 1, 2, 3]}).programs[3].ops[-1].groups == [[0, 1, 2, 3]]


def test_sends_and_recvs_match_by_comm_tag(tmp_path):
    def p2p(node_id, kind, peer_key, peer, tag, deps=()):
        return {"id": str(node_id), "type": kind, "dataDeps": [str(d) for d in deps],
                "attr": [{"name": peer_key, "int32Val": peer}, {"name": "comm_size", "int64Val": "1048576"},
                         {"name": "comm_tag", "int64Val": str(tag)}]}
    r0 = stream_file(tmp_path, "t0.json", [
        {"version": "0.0.4"},
        {"id": "1", "name": "k1", "type": "COMP_NODE", "durationMicros": "1000"},
        p2p(2, "COMM_SEND_NODE", "comm_dst", 1, tag=1),
        p2p(3, "COMM_SEND_NODE", "comm_dst", 1, tag=2, deps=[1]),
    ])
    r1 = stream_file(tmp_path, "t1.json", [
        {"version": "0.0.4"},
        p2p(1, "COMM_RECV_NODE", "comm_src", 0, tag=2),
        p2p(2, "COMM_RECV_NODE", "comm_src", 0, tag=1),
        {"id": "3", "name": "k3", "type": "COMP_NODE", "durationMicros": "1500", "dataDeps": ["2"]},
    ])
    r = replay(import_chakra([r0, r1]), load_arch("dgx-h100"))
    # k3 needs only the tag-1 message, sent at once: it ends by about 1.52 ms, not after k1 (2.5 ms)
    assert r.devices[1].finish_s < 1.6e-3


def test_newer_node_types_import_as_host_nodes(tmp_path):
    path = write(tmp_path, [{"id": 1, "type": "STORAGE_NODE"}, {"id": 2, "type": 10, "data_deps": [1]}])
    ops = import_chakra([path]).programs[0].ops
    assert [(op.stream, op.flops) for op in ops] == [("host", 0), ("host", 0)]


def test_a_binary_et_file_says_how_to_convert_it(tmp_path):
    path = tmp_path / "r.0.et"
    path.write_bytes(b"\x08\x01\x12\x03abc")
    with pytest.raises(InputError, match="chakra_jsonizer"):
        import_chakra([path])


def test_a_process_group_given_twice_is_refused(cli, tmp_path):
    result = cli("import", "chakra", *map(str, RANKS), "--group", "tp=0", "--group", "tp=0-1",
                 "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and "--group: process group 'tp' is given twice" in result.err


@pytest.mark.parametrize("group, says", [("tp=5", "names rank 5, but there are 2 rank files"),
                                         ("tp=0,0", "names a rank twice")])
def test_a_process_group_past_the_ranks_or_naming_one_twice_is_refused(cli, tmp_path, group, says):
    result = cli("import", "chakra", *map(str, RANKS), "--group", group, "-o", str(tmp_path / "o.json"))
    assert result.code == 2 and result.err.count("\n") == 1 and says in result.err
    assert not (tmp_path / "o.json").exists()
