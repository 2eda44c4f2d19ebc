"""``accelsim demo`` runs the tour and writes its timelines and plot where it says."""

import json


def test_demo_writes_timelines_and_roofline(cli, tmp_path):
    out = tmp_path / "demo"
    result = cli("demo", "--out", str(out))
    assert result.code == 0, result.err
    for chip in ("h100-sxm", "tpu-v5e"):
        assert chip in result.out
    for family in ("gemm", "attention", "rmsnorm"):
        assert family in result.out
    timelines = sorted(out.glob("*.timeline.json"))
    assert len(timelines) >= 6
    assert json.loads(timelines[0].read_text())["traceEvents"]
    assert (out / "roofline.png").stat().st_size > 10_000
    assert str(out) in result.out


def test_an_output_name_taken_by_a_folder_is_refused_before_any_work(cli, tmp_path):
    out = tmp_path / "demo"
    (out / "roofline.png").mkdir(parents=True)
    result = cli("demo", "--out", str(out))
    assert result.code == 2 and "roofline.png" in result.err and "is a folder" in result.err
    assert [p.name for p in out.iterdir()] == ["roofline.png"]  # no timeline written
