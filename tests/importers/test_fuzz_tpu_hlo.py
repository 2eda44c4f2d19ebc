"""Fuzzing scheduled TPU HLO: mutations of a module of async collective pairs (a
collective matmul's collective-permute-start/done and copy-start/done, as libtpu prints
it) and of one whose all-gather runs on the SparseCores (custom-call start/update/done)
are refused in one line with nothing written, or imported into a system trace that loads."""

import gzip
from pathlib import Path

from hypothesis import given

from accelsim.system.trace import load_system_trace
from tests.fuzzing import fuzz_settings, mutated_text, refused_or_ok
from tests.importers.test_hlo_sparsecore import OFFLOADED

HERE = Path(__file__).resolve().parent
COLLECTIVE_MATMUL = gzip.decompress((HERE / "fixtures" / "tpu_v5e_2x2_collective_matmul.hlo.txt.gz").read_bytes()
                                    ).decode()


@fuzz_settings(examples=20)
@given(text=mutated_text(COLLECTIVE_MATMUL) | mutated_text(OFFLOADED))
def test_mutated_scheduled_tpu_hlo(cli, tmp_path, text):
    source, out = tmp_path / "m.hlo.txt", tmp_path / "t.json"
    out.unlink(missing_ok=True)  # the folder is the test's, shared by its examples
    source.write_text(text)
    if refused_or_ok(cli("import", "hlo", str(source), "--system", "tpu-v5e-4x4", "-o", str(out))):
        assert load_system_trace(out).num_ops > 0
    else:
        assert not out.exists()
