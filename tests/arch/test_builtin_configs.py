"""The shipped configs load, resolve, and cite a source for every number."""

from __future__ import annotations

import pytest

from accelsim.arch import describe, model
from accelsim.arch.loader import builtin_names, builtin_paths, load_spec

NAMES = builtin_names()

REQUIRED_CHIPS = {"a100-sxm4-80gb", "h100-sxm", "h200-sxm", "b200", "mi300x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x"}
REQUIRED_KINDS = {"chip", "node", "cluster", "torus", "multislice"}


def test_every_required_chip_ships():
    assert REQUIRED_CHIPS <= set(NAMES)


def test_every_system_kind_ships():
    kinds = {load_spec(name)[0].kind for name in NAMES}
    assert REQUIRED_KINDS <= kinds


@pytest.mark.parametrize("path", builtin_paths(), ids=lambda p: p.stem)
def test_name_matches_file(path):
    spec, _ = load_spec(str(path))
    assert spec.name == path.stem


@pytest.mark.parametrize("name", NAMES)
def test_resolves(name):
    arch = model.load_arch(name)
    assert arch.name == name


@pytest.mark.parametrize("name", NAMES)
def test_every_number_is_cited(name):
    """Published numbers name their source; estimates and fits say what they are."""
    tree = describe.describe(name)["config"]
    for path, leaf in describe.leaves(tree):
        if "basis" not in leaf:
            continue  # a plain field (name, kind, ...), not a number
        if leaf["basis"] in ("estimate", "fitted"):
            assert leaf.get("note") or leaf.get("source"), f"{name}: {path} is an {leaf['basis']} without a note"
        else:
            assert leaf.get("source"), f"{name}: {path} has no source"


def test_aliases_do_not_collide():
    seen: dict[str, str] = {}
    for name in NAMES:
        spec, _ = load_spec(name)
        for alias in [spec.name, *spec.aliases]:
            assert alias not in seen or seen[alias] == spec.name, f"{alias} names {seen[alias]} and {spec.name}"
            seen[alias] = spec.name


def test_gpu_peaks_match_datasheets():
    """Per-cycle figures times cores times clock give the vendors' dense peaks (H100's at the
    1.83 GHz it is quoted at: with the boost clock, on by default, the chip's clock is 1.98 GHz)."""
    h100 = model.load_arch("h100-sxm", ["power.dvfs.boost.enabled=false"])
    assert h100.matrix_flops_per_s("bf16") == pytest.approx(989.4e12, rel=0.01)
    assert h100.matrix_flops_per_s("fp8") == pytest.approx(1978.9e12, rel=0.01)
    boosted = model.load_arch("h100-sxm")  # kernels start at 1.98 GHz; the datasheet still quotes 1.83
    assert (boosted.clock_hz, boosted.peak_clock_hz) == pytest.approx((1.98e9, 1.83e9))
    assert boosted.datasheet_matrix_flops_per_s("bf16") == h100.matrix_flops_per_s("bf16")
    a100 = model.load_arch("a100-sxm4-80gb")
    assert a100.matrix_flops_per_s("bf16") == pytest.approx(312e12, rel=0.01)


def test_tpu_peaks_match_published():
    assert model.load_arch("tpu-v5e").matrix_flops_per_s("bf16") == pytest.approx(197e12, rel=0.01)
    assert model.load_arch("tpu-v5p").matrix_flops_per_s("bf16") == pytest.approx(459e12, rel=0.01)
    assert model.load_arch("tpu-v6e").matrix_flops_per_s("bf16") == pytest.approx(918e12, rel=0.01)
