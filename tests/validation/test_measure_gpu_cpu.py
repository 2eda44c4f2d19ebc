"""measure_gpu.py on the CPU: the same sweep, timing and files as on a GPU, at tiny sizes."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

import measure_gpu  # noqa: E402  (needs torch)
import measurement_format as fmt  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "measure_gpu.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("cpu")
    done = _run("--quick", "--suites", "library", "--out", str(out))
    return out, done.stdout


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_one_valid_file_per_family(quick):
    out, _ = quick
    assert sorted(p.stem for p in out.glob("*.json")) == sorted(measure_gpu.PLANS)
    assert not [p for p in out.iterdir() if p.suffix != ".json"], "temporary files left behind"
    for path in out.glob("*.json"):
        data = _load(path)
        assert fmt.validate_measurement_file(data) == [], path.name
        assert data["device"]["name"] == "cpu"
        assert data["device"]["arch"] is None
        assert data["provenance"]["timing"]["method"] == "perf_counter"
        assert "--quick" in data["provenance"]["command"]
        assert data["provenance"]["versions"]["torch"]


def test_every_case_is_checked_and_measured(quick):
    out, _ = quick
    for path in out.glob("*.json"):
        data = _load(path)
        assert data["checks"] and all(c["passed"] for c in data["checks"]), data["checks"]
        assert data["skipped"] == []
        assert data["records"]
        for record in data["records"]:
            assert record["measured"] is True
            assert len(record["samples_s"]) >= 3
            assert record["latency_s"] == statistics.median(record["samples_s"])
            assert record["flops"] == fmt.nominal_flops(record["family"], record["params"])
            assert record["bytes"] == fmt.min_bytes(record["family"], record["params"])


def test_prints_a_short_table_last(quick):
    _, stdout = quick
    lines = stdout.strip().splitlines()
    assert "files in" in lines[-1]
    header = lines[-len(measure_gpu.PLANS) - 2]
    assert header.split()[:3] == ["file", "measured", "skipped"]
    assert [line.split()[0] for line in lines[-len(measure_gpu.PLANS) - 1:-1]] == sorted(f"{f}.json" for f in measure_gpu.PLANS)


def test_budget_and_family_selection(tmp_path):
    done = _run("--families", "softmax,copy", "--budget-s", "0.001", "--out", str(tmp_path))
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == ["copy", "softmax"]
    for path in tmp_path.glob("*.json"):
        data = _load(path)
        assert data["records"] == []
        assert data["skipped"] and all(s["reason"].startswith("time budget") for s in data["skipped"])
    assert "not started (time budget)" in done.stdout  # the pallas and collectives suites
    assert not (tmp_path / "pallas").exists()


@pytest.mark.parametrize("budget", ["0", "-5", "nan", "-inf", "soon"])
def test_a_budget_is_seconds_above_zero(capsys, budget):
    with pytest.raises(SystemExit) as exit_:
        measure_gpu.parse_args([f"--budget-s={budget}"])
    assert exit_.value.code == 2
    assert "--budget-s: expected seconds above 0" in capsys.readouterr().err


@pytest.mark.parametrize("out", ["", "FILE"])
def test_an_output_folder_is_checked_before_measuring(capsys, tmp_path, out):
    if out == "FILE":
        out = str(tmp_path / "f")
        Path(out).write_text("x")
    with pytest.raises(SystemExit) as exit_:
        measure_gpu.parse_args(["--out", out])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err


def test_unknown_family_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        measure_gpu.parse_args(["--families", "conv"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "conv" in err and "gemm" in err


def test_a_kernel_that_misses_outputs_fails_its_check(monkeypatch):
    import torch

    def lazy_copy(params, device):
        src = torch.randint(0, 256, (params["bytes"],), dtype=torch.uint8)
        dst = torch.empty_like(src)
        dst[: params["bytes"] // 2].copy_(src[: params["bytes"] // 2])  # the second half never written
        return measure_gpu.Prepared(
            run=lambda: dst, reference=lambda: src.double(), implementation="lazy", notes="",
            poison=lambda: torch.bitwise_not(src, out=dst),
        )

    monkeypatch.setitem(measure_gpu.PREPARE, "copy", lazy_copy)
    device = measure_gpu.Device(torch.device("cpu"), {"name": "cpu"})
    check = measure_gpu.run_check("copy", {"bytes": 2**20}, device)
    assert check["passed"] is False
    assert check["rel_error"] > 0


def test_asking_for_a_gpu_where_torch_sees_none_is_exit_2(capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as exit_:
        measure_gpu.choose_device("cuda", estimate_only=False)
    assert exit_.value.code == 2 and "torch sees no GPU" in capsys.readouterr().err
    assert measure_gpu.choose_device("cuda", estimate_only=True) == "cuda"
