"""Fuzzing the importers: mutations of HLO text (GPU, and scheduled TPU HLO), Chakra
traces and nccl-tests logs are refused in one line, or imported into output that reads
back (a system trace that loads, collective records whose times a measurement file may
hold)."""

import gzip
import json
from pathlib import Path

from hypothesis import given

from accelsim.system.trace import load_system_trace
from accelsim.validate.collectives import load_measurements
from tests.fuzzing import fuzz_settings, mutated, mutated_text, refused_or_ok
from tests.importers.test_hlo_sparsecore import OFFLOADED as SPARSECORE_OFFLOADED
from tests.importers.test_nccl_tests_import import dgx_h100_rows, log_of

HERE = Path(__file__).resolve().parent
HLO = (HERE / "fixtures" / "gpu_async_handwritten.hlo.txt").read_text()
TPU_COLLECTIVE_MATMUL = gzip.decompress((HERE / "fixtures" / "tpu_v5e_2x2_collective_matmul.hlo.txt.gz").read_bytes()
                                        ).decode()


def _objects(text: str) -> list:
    """The JSON objects of a stream written back to back (as chakra_jsonizer writes them)."""
    decoder, out, pos = json.JSONDecoder(), [], 0
    while text[pos:].strip():
        value, end = decoder.raw_decode(text[pos:].lstrip())
        pos += len(text[pos:]) - len(text[pos:].lstrip()) + end
        out.append(value)
    return out


RANKS = [_objects((HERE / "chakra_fixture" / f"rank{r}.json").read_text()) for r in (0, 1)]


@fuzz_settings(examples=15)
@given(text=mutated_text(HLO))
def test_mutated_hlo_text(cli, tmp_path, text):
    _hlo_imported_or_refused(cli, tmp_path, text, "dgx-h100")


@fuzz_settings(examples=20)
@given(text=mutated_text(TPU_COLLECTIVE_MATMUL) | mutated_text(SPARSECORE_OFFLOADED))
def test_mutated_scheduled_tpu_hlo(cli, tmp_path, text):
    """libtpu's async pairs (collective-permute and copy start/done) and SparseCore
    offloads (custom-call start/update/done)."""
    _hlo_imported_or_refused(cli, tmp_path, text, "tpu-v5e-4x4")


def _hlo_imported_or_refused(cli, tmp_path, text: str, system: str) -> None:
    """Refused in one line with nothing written, or imported into a trace that loads."""
    source, out = tmp_path / "m.hlo.txt", tmp_path / "t.json"
    out.unlink(missing_ok=True)  # the folder is the test's, shared by its examples
    source.write_text(text)
    if refused_or_ok(cli("import", "hlo", str(source), "--system", system, "-o", str(out))):
        assert load_system_trace(out).num_ops > 0
    else:
        assert not out.exists()


@fuzz_settings(examples=20)
@given(rank0=mutated(RANKS[0]))
def test_mutated_chakra_traces(cli, tmp_path, rank0):
    paths, out = [tmp_path / "rank0.json", tmp_path / "rank1.json"], tmp_path / "t.json"
    out.unlink(missing_ok=True)
    paths[0].write_text("\n".join(json.dumps(value) for value in rank0))
    paths[1].write_text("\n".join(json.dumps(value) for value in RANKS[1]))
    if refused_or_ok(cli("import", "chakra", *map(str, paths), "-o", str(out))):
        assert load_system_trace(out).num_devices == 2
    else:
        assert not out.exists()


NCCL_LOG = log_of(dgx_h100_rows()[:4])


@fuzz_settings(examples=20)
@given(text=mutated_text(NCCL_LOG))
def test_mutated_nccl_tests_logs(cli, tmp_path, text):
    log, out = tmp_path / "a.log", tmp_path / "r.json"
    out.unlink(missing_ok=True)
    log.write_text(text)
    if refused_or_ok(cli("import", "nccl-tests", str(log), "--system", "dgx-h100", "-o", str(out))):
        assert all(1e-9 <= m.time_s <= 86400 for m in load_measurements(out))
    else:
        assert not out.exists()
