"""Input files that are not what they claim: binary or compressed bytes, UTF-16, JSON
nested past any real file, JSON's non-standard NaN and Infinity, YAML aliases that expand
exponentially. Each is one located error (exit 2), never a traceback or a hang."""

import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL_TRACE = ROOT / "traces" / "triton" / "matmul_512.json"


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "binary": b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
        "gzip": gzip.compress(KERNEL_TRACE.read_bytes()),
        "utf16": KERNEL_TRACE.read_text().encode("utf-16"),
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "nan": KERNEL_TRACE.read_text().replace('"flops":', '"flops": NaN, "x":', 1).encode(),
        "twice": KERNEL_TRACE.read_text().replace('"flops":', '"flops": 1, "flops":', 1).encode(),
    }
    out = {}
    for name, data in files.items():
        out[name] = tmp_path / f"{name}.json"
        out[name].write_bytes(data)
    return out


@pytest.mark.parametrize("name", ["binary", "gzip", "utf16", "deep", "nan", "twice"])
def test_a_kernel_trace_that_is_not_json_text_is_one_line(cli, tmp_path, name):
    result = cli("simulate", "--arch", "h100", str(_bad_files(tmp_path)[name]))
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.count("\n") == 1 and f"{name}.json" in result.err


@pytest.mark.parametrize("name", ["binary", "deep", "nan", "twice"])
def test_system_traces_and_chakra_files_too(cli, tmp_path, name):
    path = str(_bad_files(tmp_path)[name])
    for args in (("replay", path, "--system", "dgx-h100"),
                 ("import", "chakra", path, "-o", str(tmp_path / "out.json"))):
        result = cli(*args)
        assert result.code == 2 and result.err.count("\n") == 1, (args, result.err)
    assert not (tmp_path / "out.json").exists()


def test_nan_is_refused_as_not_json(cli, tmp_path):
    result = cli("simulate", "--arch", "h100", str(_bad_files(tmp_path)["nan"]))
    assert "NaN is not a JSON number" in result.err


def test_yaml_aliases_are_refused_at_their_line(cli, tmp_path):
    lines = ["schema_version: 1", "kind: chip", "a: &a [x, x, x, x, x, x, x, x, x]"]
    for level in "bcdefghijk":  # 9^10 elements if expanded
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [" + ", ".join([f"*{previous}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    result = cli("arch", "show", str(path))
    assert result.code == 2 and "YAML aliases" in result.err and "laughs.yaml:4" in result.err


def test_a_binary_config_is_one_line(cli, tmp_path):
    path = tmp_path / "chip.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    result = cli("arch", "show", str(path))
    assert result.code == 2 and "not UTF-8 text" in result.err


def test_json_that_is_valid_still_loads(tmp_path):
    from accelsim.errors import read_json_file

    path = tmp_path / "ok.json"
    path.write_text(json.dumps({"a": [1.5, -2, {"b": None}]}))
    assert read_json_file(path, "test") == {"a": [1.5, -2, {"b": None}]}


def test_a_key_written_twice_is_refused_at_its_second_line(cli, tmp_path):
    path = tmp_path / "chip.yaml"
    path.write_text("schema_version: 1\nkind: chip\nname: x\nname: y\n")
    result = cli("arch", "show", str(path))
    assert result.code == 2 and "chip.yaml:4: name: key 'name' appears twice" in result.err


def test_a_json_key_written_twice_is_refused(cli, tmp_path):
    result = cli("simulate", "--arch", "h100", str(_bad_files(tmp_path)["twice"]))
    assert "key 'flops' appears twice in one object" in result.err


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
def test_a_pipe_or_device_is_refused_not_read(cli, tmp_path):
    """A FIFO would block forever and /dev/zero fill memory: neither is read."""
    import os

    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    result = cli("simulate", "--arch", "h100", str(fifo))
    assert result.code == 2 and "not a regular file" in result.err and result.err.count("\n") == 1
    system = tmp_path / "step.json"
    system.write_text(json.dumps({"schema_version": 1, "num_devices": 1, "programs": [
        {"name": "p", "devices": [0], "ops": [{"name": "a", "kind": "compute", "kernel_trace": "/dev/zero"}]}]}))
    result = cli("replay", str(system), "--system", "dgx-h100")
    assert result.code == 2 and "/dev/zero" in result.err and "not a regular file" in result.err
