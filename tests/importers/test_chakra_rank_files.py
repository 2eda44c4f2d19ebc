"""Which file is which rank: the numbers in the file names when each has its own (a shell
glob lists rank10 before rank2), a folder of numbered files, else the order given."""

import json

import pytest

from accelsim.errors import InputError
from accelsim.importers.chakra import rank_files

RANKS = 12


def write_pipeline(folder, name=lambda r: f"rank{r}.json"):
    """A chain: rank r computes, receives from r - 1 and sends to r + 1 (tag 0)."""
    folder.mkdir()
    for r in range(RANKS):
        nodes = [{"id": "1", "name": "c", "type": "COMP_NODE", "durationMicros": str(100 + r)}]
        if r:
            nodes.append({"id": "2", "name": "recv", "type": "COMM_RECV_NODE", "attr": [
                {"name": "comm_src", "int32Val": r - 1}, {"name": "comm_size", "int64Val": "1048576"}]})
        if r < RANKS - 1:
            nodes.append({"id": "3", "name": "send", "type": "COMM_SEND_NODE", "dataDeps": ["1"], "attr": [
                {"name": "comm_dst", "int32Val": r + 1}, {"name": "comm_size", "int64Val": "1048576"}]})
        (folder / name(r)).write_text(json.dumps(nodes))
    return folder


def test_glob_order_is_put_back_in_rank_order(tmp_path):
    folder = write_pipeline(tmp_path / "et")
    globbed = sorted(str(p) for p in folder.iterdir())  # rank0, rank1, rank10, rank11, rank2, ...
    files, renumbered = rank_files(globbed)
    assert renumbered and [f.name for f in files] == [f"rank{r}.json" for r in range(RANKS)]


def test_a_folder_stands_for_its_numbered_files(tmp_path):
    folder = write_pipeline(tmp_path / "et", name=lambda r: f"llama_h100_rank_{r}.et.json")
    files, _ = rank_files([str(folder)])
    assert [f.name for f in files] == [f"llama_h100_rank_{r}.et.json" for r in range(RANKS)]


def test_unnumbered_files_keep_the_order_given_but_a_folder_of_them_is_refused(tmp_path):
    folder = tmp_path / "et"
    folder.mkdir()
    for name in ("b.json", "a.json"):
        (folder / name).write_text("[]")
    files, renumbered = rank_files([str(folder / "b.json"), str(folder / "a.json")])
    assert not renumbered and [f.name for f in files] == ["b.json", "a.json"]
    with pytest.raises(InputError, match="cannot tell which file is which rank"):
        rank_files([str(folder)])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .json files"):
        rank_files([str(tmp_path / "empty")])


def test_the_cli_imports_a_glob_and_a_folder_alike_and_replays(cli, tmp_path):
    folder = write_pipeline(tmp_path / "et")
    globbed = sorted(str(p) for p in folder.iterdir())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    first = cli("import", "chakra", *globbed, "-o", str(a))
    second = cli("import", "chakra", str(folder), "-o", str(b))
    assert first.code == second.code == 0, first.err + second.err
    assert "ranks from the file names: 0=rank0.json" in first.out
    programs = json.loads(a.read_text())["programs"]
    assert [p["ops"][0]["duration_s"] for p in programs] == pytest.approx([(100 + r) * 1e-6 for r in range(RANKS)])
    assert json.loads(b.read_text())["programs"] == programs
    replay = cli("replay", str(a), "--system", "h100-ib-cluster", "--set", "nodes=2")
    assert replay.code == 0, replay.err


@pytest.mark.parametrize("name", [lambda r: f"rank{r}_iter5.json", lambda r: f"rank{r}.v2.json",
                                  lambda r: f"run7_rank{r}_step100.json"])
def test_names_with_more_numbers_use_the_place_where_they_differ(tmp_path, name):
    folder = write_pipeline(tmp_path / "et", name=name)
    globbed = sorted(str(p) for p in folder.iterdir())
    files, renumbered = rank_files(globbed)
    assert renumbered and [f.name for f in files] == [name(r) for r in range(RANKS)]
