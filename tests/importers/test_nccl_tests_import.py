"""``accelsim import nccl-tests``: nccl-tests' printed tables as collective records, read
back as ``validation/collectives/*.json`` records are (a round trip through the DGX H100
records), older logs with ``--collective``, non-MPI logs with ``--ranks``, and bad logs as
one line naming the file and line."""

import json
from pathlib import Path

import pytest

from accelsim.errors import InputError
from accelsim.importers.nccl_tests import read_log
from accelsim.validate.collectives import load_measurements, read_collective_records

HEAD = """# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501
# Collective test starting: {program}
# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
#
# Using devices
{ranks}#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def rank_lines(n, same=False):
    return "".join(f"#  Rank {0 if same else r:2d} Group  0 Pid {100 + r:6d} on node1 device {r:2d} [0000:{r:02x}:00] "
                   f"NVIDIA H100 80GB HBM3\n" for r in range(n))


def log_of(records, program="all_reduce_perf", ranks=8, same=False):
    rows = "".join(f"{int(r.size_bytes):12d} {int(r.size_bytes) // 4:13d}     float     sum      -1 "
                   f"{r['oop']:8.2f}   0.00   0.00      0 {r['ip']:8.2f}   0.00   0.00      0\n" for r in records)
    return HEAD.format(program=program, ranks=rank_lines(ranks, same)) + rows + "# Avg bus bandwidth    : 1.0\n"


class Row(dict):
    size_bytes = 0


def dgx_h100_rows():
    doc = json.loads(Path("validation/collectives/all_reduce.json").read_text())
    rows = []
    for r in doc["records"]:
        if r["system"] == "dgx-h100" and r["algorithm"] == "auto" and "time_out_of_place_us" in r:
            row = Row(oop=r["time_out_of_place_us"], ip=r["time_in_place_us"])
            row.size_bytes = r["size_bytes"]
            rows.append(row)
    return rows


def test_a_log_reads_back_as_the_published_records_do(cli, tmp_path):
    rows = dgx_h100_rows()
    assert len(rows) >= 25
    log = tmp_path / "dgx.log"
    log.write_text(log_of(rows))
    out = tmp_path / "dgx.json"
    result = cli("import", "nccl-tests", str(log), "--system", "dgx-h100", "-o", str(out))
    assert result.code == 0, result.err
    assert f"{len(rows)} records (all-reduce over 8 ranks) on dgx-h100" in result.out
    ours = sorted((m.size_bytes, m.time_s) for m in read_collective_records([out], "dgx-h100", "h100-sxm"))
    published = sorted((m.size_bytes, m.time_s) for m in load_measurements(Path("validation/collectives/all_reduce.json"))
                       if m.system == "dgx-h100" and m.algorithm == "auto" and m.tool == "nccl-tests"
                       and m.size_bytes in {r.size_bytes for r in rows})
    assert [s for s, _ in ours] == [s for s, _ in published]
    assert [t for _, t in ours] == pytest.approx([t for _, t in published], rel=1e-4)


def test_an_older_log_needs_the_collective_and_a_non_mpi_one_the_ranks(tmp_path):
    rows = dgx_h100_rows()[:3]
    old = tmp_path / "old.log"
    old.write_text(log_of(rows).replace("# Collective test starting: all_reduce_perf\n", ""))
    with pytest.raises(InputError, match="give --collective"):
        read_log(old)
    assert read_log(old, collective="all-reduce")[0]["ranks"] == 8
    single = tmp_path / "single.log"
    single.write_text(log_of(rows, same=True))
    with pytest.raises(InputError, match="give --ranks"):
        read_log(single)
    assert read_log(single, ranks=8)[0]["ranks"] == 8


@pytest.mark.parametrize("change, says", [
    (lambda t: t.replace("all_reduce_perf", "reduce_perf"), "reduce_perf has no counterpart"),
    (lambda t: t.replace("     float     sum      -1 ", "     float     sum ", 1), "line 17: expected a result row"),
    (lambda t: t.replace("      0 ", "      0 oops ", 1), "line 17: expected a result row"),
    (lambda t: "\n".join(line for line in t.splitlines() if not line.strip()[:1].isdigit()), "no nccl-tests results"),
])
def test_bad_logs_are_one_line_naming_the_line(tmp_path, change, says):
    log = tmp_path / "bad.log"
    log.write_text(change(log_of(dgx_h100_rows()[:3])))
    with pytest.raises(InputError, match=says):
        read_log(log)


def test_the_command_refuses_bad_options_in_one_line(cli, tmp_path):
    log = tmp_path / "a.log"
    log.write_text(log_of(dgx_h100_rows()[:3]))
    for extra, says in ((("--ranks", "1"), "--ranks: expected 2"), (("-o", str(log)), "-o:")):
        args = ["import", "nccl-tests", str(log), "--system", "dgx-h100", "-o", str(tmp_path / "x.json"), *extra]
        result = cli(*args)
        assert result.code == 2 and says in result.err and result.err.count("\n") == 1


def test_sendrecv_is_a_permute_and_all_types_and_ops_are_kept_apart(tmp_path):
    rows = dgx_h100_rows()[:3]
    log = tmp_path / "sr.log"
    log.write_text(log_of(rows, program="sendrecv_perf"))
    [test] = read_log(log)
    assert test["collective"] == "collective-permute"
    both = tmp_path / "all.log"  # nccl-tests -d all: each size once per type
    text = log_of(rows)
    both.write_text(text + "".join(line.replace(" float ", "  half ") + "\n" for line in text.splitlines()
                                   if line.strip()[:1].isdigit()))
    from accelsim.importers.nccl_tests import records

    found = records([both], "dgx-h100")
    assert len(found) == 6 and len({r["id"] for r in found}) == 6


def with_first_row(text: str, column: int, value: str) -> str:
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.strip()[:1].isdigit())
    tokens = lines[k].split()
    tokens[column] = value
    lines[k] = " ".join(tokens)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("column, value, says", [(5, "inf", "to a day"), (9, "nan", "to a day"),
                                                 (5, "1e-300", "from 0.001 us"), (9, "0.0000001", "from 0.001 us"),
                                                 (0, "9" * 19, "up to 8 PiB"), (0, "9" * 5000, "up to 8 PiB")])
def test_impossible_rows_are_refused(tmp_path, column, value, says):
    log = tmp_path / "bad.log"
    log.write_text(with_first_row(log_of(dgx_h100_rows()[:3]), column, value))
    with pytest.raises(InputError, match=says):
        read_log(log)


def test_the_node_bounds_the_ranks_and_the_log_names_its_test(cli, tmp_path):
    log = tmp_path / "a.log"
    log.write_text(log_of(dgx_h100_rows()[:3], ranks=16))
    for args, says in ((("--system", "dgx-h100"), "over 16 ranks, more than dgx-h100's 8 GPUs"),
                       (("--system", "h100-ib-cluster"), "is a cluster; collective records are fitted"),
                       (("--system", "dgx-h100", "--collective", "all-gather", "--ranks", "8"),
                        "the log ran all_reduce_perf (all-reduce), not --collective all-gather")):
        result = cli("import", "nccl-tests", str(log), *args, "-o", str(tmp_path / "x.json"))
        assert result.code == 2 and says in result.err and result.err.count("\n") == 1, (args, result.err)
        assert not (tmp_path / "x.json").exists()
