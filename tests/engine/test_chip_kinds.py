"""A chip's kind is its type (GpuChip, TpuChip: a config's ``family`` field), and each kind
has its engine strategy; "family" elsewhere means a kernel family."""

from __future__ import annotations

import pytest

from accelsim.arch.loader import load_raw
from accelsim.arch.model import CHIP_KINDS, GpuChip, TpuChip, load_arch
from accelsim.engine.chip import ENGINES, engine_for
from accelsim.engine.gpu import GpuEngine
from accelsim.engine.tpu import TpuEngine
from tests.conftest import REPO

CHIPS = sorted(p.stem for p in (REPO / "arch_configs").glob("*/*.yaml") if load_raw(p.stem).data.get("kind") == "chip")


@pytest.mark.parametrize("name", CHIPS)
def test_each_config_resolves_to_its_kinds_type(name):
    chip = load_arch(name)
    assert type(chip) is CHIP_KINDS[load_raw(name).data["family"]]
    assert chip.kind == load_raw(name).data["family"]
    assert not hasattr(chip, "family")
    assert all(type(variant) is type(chip) for variant in chip.family_chips.values())


def test_every_kind_has_an_engine():
    assert set(ENGINES) == set(CHIP_KINDS.values())
    assert isinstance(engine_for(load_arch("h100-sxm")), GpuEngine)
    assert isinstance(engine_for(load_arch("tpu-v5e")), TpuEngine)


def test_kind_specific_fields_live_on_their_kind():
    gpu, tpu = load_arch("h100-sxm"), load_arch("tpu-v5p")
    assert isinstance(gpu, GpuChip) and gpu.occupancy.warp_size == 32 and not hasattr(gpu, "megacore")
    assert isinstance(tpu, TpuChip) and tpu.megacore and not hasattr(tpu, "occupancy")
