"""``accelsim compile tpu``: a JAX program compiled by the real TPU compiler for a named
slice, on a CPU. The live tests need libtpu (``pip install -e '.[tpu]'``) and skip
cleanly without it: it is not in the ``test`` extra (about 700 MB, and a TPU probe in
every JAX process of the suite; docs/import-hlo.md, "Compiling for a TPU")."""

import importlib.util
from pathlib import Path

import pytest

from accelsim.capture.tpu_compile import parse_mesh, parse_topology
from accelsim.errors import InputError

REPO = Path(__file__).resolve().parents[2]
STEP = f"{REPO / 'tests' / 'importers' / 'fixtures' / 'tpu_train_step.py'}:train_step"
TINY = ("--param", "layers=1", "--param", "d_model=256", "--param", "d_ff=512", "--param", "heads=2",
        "--param", "seq=128", "--param", "vocab=1024")
HAS_LIBTPU = importlib.util.find_spec("libtpu") is not None


def test_topologies_by_name():
    assert parse_topology("v5e:4x4").chips == 16
    assert parse_topology("v5p:4x4x4").chips_per_host_bounds == (2, 2, 1)
    assert parse_topology("v5e:1x1").chips_per_host_bounds == (1, 1, 1)


@pytest.mark.parametrize(("text", "message"), [
    ("v9:2x2", "GEN one of v4, v5e, v5p, v6e"),
    ("v5e", "expected a TPU topology"),
    ("v5p:64x64x64", "at most 8960 chips"),
    ("v5e:0x4", "at most 8960 chips with every axis >= 1"),
    ("v5e:999999999999x1", "at most 8960 chips"),
    ("v5e:" + "9" * 5000 + "x4", "expected a TPU topology"),  # past int()'s 4,300 digits: was a ValueError
])
def test_bad_topologies_are_one_line(text, message):
    with pytest.raises(InputError, match=message):
        parse_topology(text)


def test_mesh_axes_cover_the_devices():
    assert parse_mesh("data=4,model=4", 16) == (("data", 4), ("model", 4))
    assert parse_mesh(None, 8) == (("data", 8),)
    with pytest.raises(InputError, match="multiply to 8 but the topology has 16"):
        parse_mesh("data=4,model=2", 16)
    with pytest.raises(InputError, match="each named once"):
        parse_mesh("data=4,data=4", 16)
    with pytest.raises(InputError, match="NAME=SIZE"):
        parse_mesh("data:4", 4)
    with pytest.raises(InputError, match="NAME=SIZE"):
        parse_mesh("data=" + "9" * 5000, 4)


def test_bad_options_fail_before_compiling(cli, tmp_path):
    result = cli("compile", "tpu", STEP, "--topology", "v5e:3", "-o", str(tmp_path / "x.hlo.txt"))
    assert result.code == 2 and "--topology" in result.err and len(result.err.splitlines()) == 1
    assert not (tmp_path / "x.hlo.txt").exists()


@pytest.mark.skipif(HAS_LIBTPU, reason="libtpu is installed")
def test_without_libtpu_says_how_to_get_it(cli, tmp_path):
    result = cli("compile", "tpu", STEP, "--topology", "v5e:2x2", "-o", str(tmp_path / "x.hlo.txt"))
    assert result.code == 2 and "pip install -e '.[tpu]'" in result.err


@pytest.mark.slow
@pytest.mark.skipif(not HAS_LIBTPU, reason="needs libtpu: pip install -e '.[tpu]'")
@pytest.mark.parametrize(("topology", "mesh", "system"), [
    ("v5e:4x4", "data=4,model=4", "tpu-v5e-4x4"),
    ("v5p:2x2x2", "data=4,model=2", "tpu-v5p-4x4x4"),
])
def test_compile_import_and_replay(cli, tmp_path, topology, mesh, system):
    hlo, trace = tmp_path / "step.hlo.txt", tmp_path / "step.json"
    compiled = cli("compile", "tpu", STEP, "--topology", topology, "--mesh", mesh, *TINY, "-o", str(hlo))
    assert compiled.code == 0, compiled.err
    assert "libtpu 0.0.42.1" in compiled.out
    text = hlo.read_text()
    assert "is_scheduled=true" in text and "estimated_cycles" in text and "S(1)" in text
    assert cli("import", "hlo", str(hlo), "--system", system, "-o", str(trace)).code == 0
    replayed = cli("replay", str(trace), "--system", system)
    assert replayed.code == 0, replayed.err
    assert "XLA's estimate" in replayed.out


@pytest.mark.skipif(not HAS_LIBTPU, reason="needs libtpu: pip install -e '.[tpu]'")
def test_a_function_that_returns_no_program_is_one_line(cli, tmp_path):
    source = tmp_path / "f.py"
    source.write_text("def step(mesh):\n    return 42\n")
    result = cli("compile", "tpu", f"{source}:step", "--topology", "v5e:2x2", "-o", str(tmp_path / "x.hlo.txt"))
    assert result.code == 2 and "returned int; expected jax.jit(f).lower(...)" in result.err
