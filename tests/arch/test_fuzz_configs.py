"""Fuzzing architecture configs: a mutated chip YAML file, or a ``--set`` of any field
to an awkward value, is refused in one line, or gives a chip on which a copy kernel runs
no faster than its peaks allow."""

import json
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from accelsim.arch.model import chip_of, load_arch
from tests.fuzzing import AWKWARD, assert_within_peaks, fuzz_settings, leaf_paths, mutated, refused_or_ok

ROOT = Path(__file__).resolve().parents[2]
H100 = yaml.safe_load((ROOT / "arch_configs" / "gpu" / "h100-sxm.yaml").read_text())
COPY = ("--kernel", "copy", "--param", "bytes=16777216", "--json")


SET_PATHS = sorted({*leaf_paths(H100), "hbm", "cores", "vector_unit.flops_per_cycle_per_core.fp32",
                    "family_values", "uncertainty.gemm", "nope.nope"})


def _ran_within_peaks(cli, arch: str, *overrides: str) -> None:
    result = cli("simulate", "--arch", arch, *COPY, *overrides)
    if refused_or_ok(result):
        chip = chip_of(load_arch(arch, [o for o in overrides if o != "--set"]))
        assert_within_peaks(json.loads(result.out), chip)


@fuzz_settings(examples=12)
@given(data=mutated(H100))
def test_a_mutated_chip_file(cli, tmp_path, data):
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    if refused_or_ok(cli("arch", "show", str(path))):
        _ran_within_peaks(cli, str(path))


@fuzz_settings(examples=25)
@given(path=st.sampled_from(SET_PATHS), value=AWKWARD, arch=st.sampled_from(["h100-sxm", "tpu-v5e"]))
def test_a_set_of_any_field(cli, path, value, arch):
    text = value if isinstance(value, str) else json.dumps(value)
    override = f"{path}={text}"
    if refused_or_ok(cli("arch", "show", arch, "--set", override)):
        _ran_within_peaks(cli, arch, "--set", override)
