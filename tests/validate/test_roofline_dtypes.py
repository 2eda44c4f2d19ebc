"""The validate report's roofline draws a roof for each dtype its records use (fp8 points
sat above the one bf16 roof)."""

from types import SimpleNamespace

import matplotlib.pyplot as plt

from accelsim.arch.model import load_arch
from accelsim.report import validation


def test_a_roof_per_dtype_of_the_records(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(validation, "draw_roof", lambda ax, chip, xs, dtype="bf16", **style: drawn.append(dtype))
    records = [SimpleNamespace(flops=1e12, hbm_bytes=1e9, predicted_s=1e-3, measurement=SimpleNamespace(
        family="attention", latency_s=1e-3, params={"dtype": dtype})) for dtype in ("fp8", "bf16", "fp8", "int4")]
    validation.plot_roofline_points(records, load_arch("h100-sxm"), tmp_path / "roof.png")
    assert drawn == ["bf16", "fp8"]  # by peak; a dtype the matrix unit has no rate for draws none
    validation.plot_roofline_points(records[3:], load_arch("h100-sxm"), tmp_path / "roof.png")
    assert drawn[2:] == ["bf16"]
    plt.close("all")
